// First script of every embed page: records each Content-Security-Policy violation and each
// console error, for the test to read.
window.violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.violations.push(e.effectiveDirective + " " + (e.blockedURI || ""));
});
window.consoleErrors = [];
var consoleError = console.error;
console.error = function () {
  window.consoleErrors.push(Array.prototype.map.call(arguments, String).join(" "));
  consoleError.apply(console, arguments);
};
