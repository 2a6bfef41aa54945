// What a newcomer mistypes: words from other tools, a worker id where a batch id belongs (and back), a bad --timeout.
import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { CliError } from "./errors";
import { expectId, HELP_AFTER, portNumber, positiveNumber, unknownCommandHint } from "./hints";

describe("unknownCommandHint", () => {
  it("answers words from other tools with the ocw command that does it (commander guessed setup for status, push for ps)", () => {
    expect(unknownCommandHint("status")).toContain("`ocw list`");
    expect(unknownCommandHint("ps")).toContain("`ocw list`");
    expect(unknownCommandHint("Answer")).toContain("`ocw approve ASK_ID`");
    expect(unknownCommandHint("kill")).toContain("`ocw cancel ID`");
    // the GUI's screens by name: commander guessed "approve" for approvals and "grade" (the model ladder) for grades
    expect(unknownCommandHint("Approvals")).toContain("`ocw asks`");
    expect(unknownCommandHint("grades")).toContain("`ocw list`");
  });
  it("leaves typos of real commands and unknown words to commander's spelling guess", () => {
    expect(unknownCommandHint("lsit")).toBeNull();
    expect(unknownCommandHint("toString")).toBeNull();
    expect(unknownCommandHint("constructor")).toBeNull();
  });
});

describe("expectId", () => {
  it("refuses a worker id where a batch id belongs, and the other way round, naming the command that takes it", () => {
    expect(() => expectId("w-abc", "batch", "`ocw show w-abc`")).toThrow(CliError);
    expect(() => expectId("w-abc", "batch", "`ocw show w-abc`")).toThrow('"w-abc" is a worker id, not a batch id (b-…): `ocw show w-abc`');
    expect(() => expectId("b-abc", "worker")).toThrow('"b-abc" is a batch id, not a worker id (w-…)');
    expect(() => expectId("a-abc", "worker")).toThrow("is an attempts group id");
  });
  it("lets the right kind and ids of no known shape through (the engine says whether they exist)", () => {
    expect(() => expectId("w-abc", "worker")).not.toThrow();
    expect(() => expectId("b-abc", "batch")).not.toThrow();
    expect(() => expectId("nope", "worker")).not.toThrow();
    expect(() => expectId("", "batch")).not.toThrow();
  });
});

describe("positiveNumber", () => {
  it("takes positive numbers, and refuses the rest as commander's invalid argument (NaN was a silent 3600)", () => {
    expect(positiveNumber()("30")).toBe(30);
    expect(positiveNumber()("0.5")).toBe(0.5);
    for (const bad of ["abc", "", " ", "0", "-5", "Infinity"]) expect(() => positiveNumber()(bad)).toThrow(InvalidArgumentError);
  });
});

describe("portNumber", () => {
  it("takes 1..65535 and refuses the rest (serve --port abc went on as NaN)", () => {
    expect(portNumber("8080")).toBe(8080);
    for (const bad of ["abc", "", "0", "65536", "80.5", "-1", "1e3"]) expect(() => portNumber(bad)).toThrow(InvalidArgumentError);
  });

  it("says what is wrong with each bad port and what to do (it was one 'must be from 1 to 65535' for all)", () => {
    const fix = "give a port from 1024 to 65535 (e.g. --port 8080), or leave --port out for a free one.";
    expect(() => portNumber("abc")).toThrow(`It is not a whole number: ${fix}`);
    expect(() => portNumber("80.5")).toThrow(`It is not a whole number: ${fix}`);
    expect(() => portNumber("0")).toThrow(`Port 0 is not a port to listen on (other tools read it as "any free port"): ${fix}`);
    expect(() => portNumber("65536")).toThrow(`Ports end at 65535: ${fix}`);
    expect(portNumber("1")).toBe(1); // root may open it; anyone else hears why from the listen (listenProblem)
  });
});

describe("ocw --help's epilogue", () => {
  it("gives a first example and every exit status", () => {
    expect(HELP_AFTER).toContain("ocw run --dir");
    for (const code of ["0", "1", "2", "3", "130"]) expect(HELP_AFTER).toMatch(new RegExp(`^  ${code} +\\S`, "m"));
  });
});
