// Maven's pom.xml, Gradle's build and settings scripts and deno.json(c) decide which tests run as much as package.json's
// test script does: a change that skips or filters tests there (`<skipTests>`, surefire's `<excludes>`, gradle's
// `test { enabled = false }`, deno's `test.exclude` or an import map that swaps the assertion module) is a
// check-configuration violation; a dependency or version bump is not. Before the fix none of these files was compared,
// and the wrappers (gradlew, mvnw) and .mvn/extensions.xml were not check configuration.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gradedIn } from "../../test/fixtures/graded";
import { plainJson, runnerConfigReason, runnerPart } from "./runner-config";

const changes = (file: string, before: string, after: string) => runnerPart(file, before) !== runnerPart(file, after);

const POM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>x</groupId>
  <artifactId>calc</artifactId>
  <version>1.0</version>
  <properties>
    <junit.version>5.10.0</junit.version>
    <maven.compiler.release>17</maven.compiler.release>
  </properties>
  <dependencies>
    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId><version>\${junit.version}</version><scope>test</scope></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>
    </plugins>
  </build>
</project>
`;
const SUREFIRE = "<plugin><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>";
const withSurefire = (config: string) => POM.replace(SUREFIRE, SUREFIRE.replace("</plugin>", `<configuration>${config}</configuration></plugin>`));

const GRADLE = `plugins {
    id 'java'
}

group = 'x'
version = '1.0'

dependencies {
    testImplementation 'org.junit.jupiter:junit-jupiter:5.10.0'
}

test {
    useJUnitPlatform()
}
`;
const KTS = `plugins {
    java
}

dependencies {
    testImplementation(platform("org.junit:junit-bom:5.10.0"))
    testImplementation("org.junit.jupiter:junit-jupiter")
}

tasks.test {
    useJUnitPlatform()
}
`;

describe("pom.xml", () => {
  it.each([
    ["the skipTests property", POM.replace("</properties>", "<skipTests>true</skipTests></properties>")],
    ["the maven.test.skip property", POM.replace("</properties>", "<maven.test.skip>true</maven.test.skip></properties>")],
    ["maven.test.failure.ignore", POM.replace("</properties>", "<maven.test.failure.ignore>true</maven.test.failure.ignore></properties>")],
    ["surefire's <skip>", withSurefire("<skip>true</skip>")],
    ["surefire's <skipTests>", withSurefire("<skipTests>true</skipTests>")],
    ["surefire's <excludes>", withSurefire("<excludes><exclude>**/Hidden*</exclude></excludes>")],
    ["surefire's <testFailureIgnore>", withSurefire("<testFailureIgnore>true</testFailureIgnore>")],
    ["packaging pom (no test phase bound)", POM.replace("<version>1.0</version>", "<version>1.0</version><packaging>pom</packaging>")],
    [
      "a profile active by default",
      POM.replace(
        "</project>",
        "<profiles><profile><id>p</id><activation><activeByDefault>true</activeByDefault></activation><properties><skipTests>true</skipTests></properties></profile></profiles></project>",
      ),
    ],
    ["a DOCTYPE with an entity", `<!DOCTYPE project [<!ENTITY s "true">]>\n${POM}`],
  ])("%s counts", (_, after) => {
    expect(changes("pom.xml", POM, after)).toBe(true);
  });

  it("a new dependency, a version bump, a description, comments and layout do not count", () => {
    const more = POM.replace(
      "</dependencies>",
      "<dependency><groupId>com.google.guava</groupId><artifactId>guava</artifactId><version>33.0.0-jre</version></dependency></dependencies>",
    );
    expect(changes("pom.xml", POM, more)).toBe(false);
    expect(changes("pom.xml", POM, POM.replace("<version>1.0</version>", "<version>1.1</version><description>calc</description>"))).toBe(false);
    expect(changes("pom.xml", POM, POM.replace("5.10.0", "5.10.2"))).toBe(false);
    expect(changes("pom.xml", POM, POM.replace("<build>", "<!-- the build -->\n\n   <build>"))).toBe(false);
  });

  it("a pom.xml that appears with surefire's skip counts; so do a broken one and the Maven wrapper's files", () => {
    expect(changes("pom.xml", "", withSurefire("<skip>true</skip>"))).toBe(true);
    expect(changes("pom.xml", POM, POM.replace("</project>", ""))).toBe(true);
    for (const f of ["mvnw", "mvnw.cmd", ".mvn/wrapper/maven-wrapper.properties", ".mvn/extensions.xml"]) expect(runnerConfigReason(f), f).not.toBeNull();
    expect(runnerConfigReason("src/main/resources/extensions.xml")).toBeNull();
  });
});

describe("build.gradle(.kts) and settings.gradle(.kts)", () => {
  it.each([
    ["test { enabled = false }", "build.gradle", GRADLE, GRADLE.replace("useJUnitPlatform()", "useJUnitPlatform()\n    enabled = false")],
    ["test { exclude }", "build.gradle", GRADLE, GRADLE.replace("useJUnitPlatform()", "useJUnitPlatform()\n    exclude '**/Hidden*'")],
    ["ignoreFailures", "build.gradle", GRADLE, GRADLE.replace("useJUnitPlatform()", "useJUnitPlatform()\n    ignoreFailures = true")],
    ["a filter", "build.gradle", GRADLE, GRADLE.replace("useJUnitPlatform()", "useJUnitPlatform()\n    filter { excludeTestsMatching '*Hidden*' }")],
    ["test.enabled inside the dependencies block", "build.gradle", GRADLE, GRADLE.replace("dependencies {", "dependencies {\n    test.enabled = false")],
    [
      "a dependency with an interpolated string",
      "build.gradle",
      GRADLE,
      GRADLE.replace("dependencies {", 'dependencies {\n    implementation "x:y:${ { test.enabled = false }() }"'),
    ],
    ["tasks.test { enabled = false } in Kotlin", "build.gradle.kts", KTS, KTS.replace("useJUnitPlatform()", "useJUnitPlatform()\n    enabled = false")],
    ["onlyIf { false }", "build.gradle.kts", KTS, `${KTS}tasks.named<Test>("test") { onlyIf { false } }\n`],
    [
      "excluded task names in settings",
      "settings.gradle",
      "rootProject.name = 'calc'\n",
      "rootProject.name = 'calc'\ngradle.startParameter.excludedTaskNames << 'test'\n",
    ],
  ])("%s counts", (_, file, before, after) => {
    expect(changes(file, before, after)).toBe(true);
  });

  it("dependency declarations in the top-level dependencies block, the version and layout do not count", () => {
    expect(changes("build.gradle", GRADLE, GRADLE.replace("dependencies {", "dependencies {\n    implementation 'com.google.guava:guava:33.0.0-jre'"))).toBe(
      false,
    );
    expect(changes("build.gradle", GRADLE, GRADLE.replace("version = '1.0'", "version = '1.1'").replace("\n\n", "\n"))).toBe(false);
    expect(
      changes("build.gradle.kts", KTS, KTS.replace("dependencies {", 'dependencies {\n    implementation(libs.guava)\n    implementation(project(":core"))')),
    ).toBe(false);
    for (const f of ["gradlew", "gradlew.bat", "gradle/wrapper/gradle-wrapper.properties"]) expect(runnerConfigReason(f), f).not.toBeNull();
  });
});

describe("deno.json(c)", () => {
  const DENO = '{\n  "name": "@x/calc",\n  "version": "1.0.0",\n  "imports": { "@std/assert": "jsr:@std/assert@1" },\n  "tasks": { "test": "deno test" }\n}\n';
  it.each([
    ["an import map entry that swaps the assertion module", DENO.replace("jsr:@std/assert@1", "./fake_assert.ts")],
    ["test.exclude", DENO.replace('"tasks"', '"test": { "exclude": ["tests/"] },\n  "tasks"')],
    ["the test task", DENO.replace("deno test", "true")],
    ["an external import map", DENO.replace('"tasks"', '"importMap": "./map.json",\n  "tasks"')],
    ["a top-level exclude", DENO.replace('"tasks"', '"exclude": ["tests"],\n  "tasks"')],
  ])("%s counts (deno.json and deno.jsonc)", (_, after) => {
    expect(changes("deno.json", DENO, after)).toBe(true);
    expect(changes("deno.jsonc", DENO, `// config\n${after.replace("}\n}", "},\n}")}`)).toBe(true);
  });

  it("name, version, fmt and lint do not count; comments and trailing commas of deno.jsonc are read as deno does", () => {
    expect(changes("deno.json", DENO, DENO.replace("1.0.0", "1.1.0").replace('"tasks"', '"fmt": { "lineWidth": 100 },\n  "tasks"'))).toBe(false);
    expect(changes("deno.jsonc", DENO, `/* c */ ${DENO.replace('"tasks"', '// the tasks\n  "tasks"').replace("}\n}", "},\n}")}`)).toBe(false);
    expect(JSON.parse(plainJson('{ "a": "// not a comment", /* x */ "b": [1, 2,], }'))).toEqual({ a: "// not a comment", b: [1, 2] });
  });
});

describe("graded", () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-build-files-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const graded = gradedIn(tmp);

  it("a worker's build.gradle that turns the test task off and a pom.xml with skipTests: check-configuration violations, not built", async () => {
    const v = await graded(
      { "build.gradle": GRADLE, "pom.xml": POM, "a.txt": "a\n" },
      (ws) => {
        writeFileSync(path.join(ws, "build.gradle"), GRADLE.replace("useJUnitPlatform()", "useJUnitPlatform()\n    enabled = false"));
        writeFileSync(path.join(ws, "pom.xml"), POM.replace("</properties>", "<skipTests>true</skipTests></properties>"));
      },
      [{ run: "true" }],
    );
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration changed: build\.gradle \(its build logic/),
      expect.stringMatching(/^check configuration changed: pom\.xml \(its build, profiles or properties/),
    ]);
    expect(v.verdict).toBe("honest-failure");
    const fine = await graded({ "pom.xml": POM }, (ws) => writeFileSync(path.join(ws, "pom.xml"), POM.replace("5.10.0", "5.10.2")), [{ run: "true" }]);
    expect(fine.verdict).toBe("built");
  }, 60_000);
});
