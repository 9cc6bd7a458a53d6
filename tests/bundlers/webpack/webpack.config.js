// Nothing wasm-specific: the package's glue loads its .wasm with
// `new URL("client_tools_bg.wasm", import.meta.url)`, which webpack 5 emits as an asset by itself
// (no `experiments.asyncWebAssembly`, no loader).
const path = require("node:path");
const HtmlWebpackPlugin = require("html-webpack-plugin");

module.exports = {
  entry: "./src/main.js",
  output: {
    // `--output-path` (the test builds into a folder of its own) overrides this.
    path: path.resolve(__dirname, "dist"),
    filename: "[name].[contenthash].js",
    clean: true,
  },
  plugins: [new HtmlWebpackPlugin({ template: "index.html" })],
};
