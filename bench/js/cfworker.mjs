// @cfworker/json-schema alone: the CSP-safe validator (it interprets schemas, no `new Function`).
export { Validator as CfworkerValidator } from "@cfworker/json-schema";
