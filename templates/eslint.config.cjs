// `make lint`: ESLint's recommended rules on the page scripts. Each page's
// scripts are one inline <script> (report.html, diff.html, flamegraph.svg
// include them in order), so the Makefile lints each page's scripts joined
// as the page has them: a name one file defines is known in the next.
// Packages from .cache/eslint (make setup), found through NODE_PATH.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  js.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "script",
      globals: { ...globals.browser },
    },
    // an unused `catch (e)` binding is how the scripts say "any error":
    // the pages' bytes stay as they are
    rules: { "no-unused-vars": ["error", { caughtErrors: "none" }] },
  },
];
