import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runChecks } from "./checks";
import { LADDER, materializeRung } from "./ladder";

/** Reference solutions: each rung's checks must fail on the fresh repo and pass once solved, or the rung proves nothing. */
const SOLUTIONS: Record<number, Record<string, string>> = {
  1: { "greeting.txt": "Hello, ladder!\n" },
  2: {
    "math.js": "function clamp(v,min,max){if(min>max)throw new RangeError('min>max');return Math.min(max,Math.max(min,v));}\nmodule.exports={clamp};\n",
    "math.test.js":
      "const test=require('node:test');const a=require('node:assert');const {clamp}=require('./math.js');test('clamps',()=>a.strictEqual(clamp(9,0,3),3));\n",
  },
  3: {
    "lru.js":
      "class LRUCache{constructor(c){if(c<1)throw new RangeError('capacity');this.c=c;this.m=new Map();}get(k){if(!this.m.has(k))return undefined;const v=this.m.get(k);this.m.delete(k);this.m.set(k,v);return v;}set(k,v){this.m.delete(k);this.m.set(k,v);if(this.m.size>this.c)this.m.delete(this.m.keys().next().value);}get size(){return this.m.size;}}\nmodule.exports={LRUCache};\n",
  },
  4: { "slugify.js": "function slugify(t){return t.toLowerCase().replace(/[^a-z0-9]+/g,'-').replace(/^-+|-+$/g,'');}\nmodule.exports={slugify};\n" },
  5: {
    "wc.js": `const fs=require("node:fs");
function count(text){return {lines:text.split("\\n").length-1,words:text.split(/\\s+/).filter(Boolean).length,chars:text.length};}
if(require.main===module){const args=process.argv.slice(2);const flags=args.filter(a=>a.startsWith("--"));const file=args.find(a=>!a.startsWith("--"));
let text;try{text=fs.readFileSync(file,"utf8");}catch{console.error("wc: "+file+": no such file");process.exit(1);}
const c=count(text);const order=["lines","words","chars"].filter(k=>flags.length===0||flags.includes("--"+k));console.log(order.map(k=>c[k]).join(" ")+" "+file);}
module.exports={count};
`,
  },
};

describe("ladder", () => {
  it.each(LADDER.map((r) => [r.rung, r.name, r] as const))(
    "rung %i (%s): its checks fail on the fresh repo and pass with a reference solution",
    async (_n, _name, rung) => {
      const dir = materializeRung(rung, mkdtempSync(path.join(os.tmpdir(), `ocw-rung${rung.rung}-`)));
      const fresh = await runChecks(rung.checks, dir);
      expect(fresh.some((c) => !c.passed)).toBe(true);
      for (const [f, content] of Object.entries(SOLUTIONS[rung.rung]!)) writeFileSync(path.join(dir, f), content);
      const solved = await runChecks(rung.checks, dir);
      expect(solved.map((c) => [c.name, c.passed, c.passed ? "" : c.output])).toEqual(solved.map((c) => [c.name, true, ""]));
    },
  );
});
