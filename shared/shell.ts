// Splitting a shell command into the simple commands it runs, for grants ("always") that mean what they say: a grant
// matches one simple command exactly, never across `;`, `&&`, `||`, `|`, `&` or a line break. Pure (no Node, no DOM).
//
// Conservative by design: what this cannot take apart with certainty is "not split", and a command that is not split
// is never answered by a grant (a person sees it every time). Not split: command or process substitution (`$(…)`,
// backticks, `<(…)`, `>(…)`), subshells and groups (`(…)`, `{ …; }`), here-documents (`<<`), an unterminated quote or
// a trailing backslash, a line continuation, a comment, any invisible or control character (bidi controls, zero-width
// characters, ESC…; see shared/untrusted.ts), and control keywords (`if`, `for`, `while`, `case`, function bodies…).
// Redirections stay part of their simple command, so a grant on `npm test` does not answer `npm test > ~/.bashrc`.
import { isHiddenCodePoint } from "./untrusted";

export type Split = { ok: true; commands: string[] } | { ok: false; why: string };

const KEYWORDS = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "for",
  "while",
  "until",
  "do",
  "done",
  "case",
  "esac",
  "select",
  "function",
  "time",
  "coproc",
  "!",
  "[[",
  "]]",
  "{",
  "}",
]);

/**
 * The simple commands of a shell command line, each with its words as written (quotes kept) joined by one space; or
 * why it could not be split with certainty.
 */
export function splitCommand(command: string): Split {
  const s = String(command ?? "");
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0x0a || cp === 0x09) continue;
    if (isHiddenCodePoint(cp)) return { ok: false, why: `it holds an invisible or control character (U+${cp.toString(16).toUpperCase().padStart(4, "0")})` };
  }
  const commands: string[] = [];
  let words: string[] = [];
  let word = "";
  let inWord = false;
  const endWord = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  const endCommand = (op: string): string | null => {
    endWord();
    if (!words.length) {
      // A blank line or the end is fine; `; a`, `a ;; b`, `a && && b`, a leading `|` are not a plain list of commands.
      return op === "\n" || op === "end" ? null : `an operator (${op}) with no command before it`;
    }
    if (KEYWORDS.has(words[0]!)) return `it uses the shell keyword "${words[0]}"`;
    commands.push(words.join(" "));
    words = [];
    return null;
  };
  /** The last character added to the word was an unquoted, unescaped `<` or `>` (a redirection, not text). */
  let redirEnd: "" | "<" | ">" = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    const endsRedir = redirEnd;
    redirEnd = "";
    if (c === "$" && (s[i + 1] === "'" || s[i + 1] === '"')) return { ok: false, why: "it uses $'…' or $\"…\" quoting" };
    if (c === "'") {
      const end = s.indexOf("'", i + 1);
      if (end < 0) return { ok: false, why: "it has an unterminated quote" };
      word += s.slice(i, end + 1);
      inWord = true;
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < s.length && s[j] !== '"'; j++) {
        if (s[j] === "\\") j++;
        else if (s[j] === "`" || (s[j] === "$" && s[j + 1] === "(")) return { ok: false, why: "it uses command substitution ($(…) or backticks)" };
      }
      if (j >= s.length) return { ok: false, why: "it has an unterminated quote" };
      word += s.slice(i, j + 1);
      inWord = true;
      i = j;
    } else if (c === "\\") {
      if (i + 1 >= s.length) return { ok: false, why: "it ends with a backslash" };
      if (s[i + 1] === "\n") return { ok: false, why: "it continues a line with a backslash" };
      word += s.slice(i, i + 2);
      inWord = true;
      i++;
    } else if (c === "`") return { ok: false, why: "it uses command substitution ($(…) or backticks)" };
    else if (c === "$" && s[i + 1] === "(") return { ok: false, why: "it uses command substitution ($(…) or backticks)" };
    else if ((c === "<" || c === ">") && s[i + 1] === "(") return { ok: false, why: "it uses process substitution (<(…) or >(…))" };
    else if (c === "(" || c === ")") return { ok: false, why: "it uses a subshell, a function or parentheses outside quotes" };
    else if (c === "#" && !inWord) return { ok: false, why: "it holds a comment (#), which can hide text after it" };
    else if (c === "<" && s[i + 1] === "<") return { ok: false, why: "it uses a here-document or here-string (<<)" };
    else if (c === " " || c === "\t") endWord();
    else if (c === "\n" || c === ";" || c === "|" || c === "&") {
      let op = c;
      // `>&2`, `2>&1`, `&>file`, `>|`: part of a redirection, not an operator.
      if (c === "&" && endsRedir) {
        word += c;
        inWord = true;
        continue;
      }
      if (c === "|" && endsRedir === ">") {
        word += c;
        inWord = true;
        continue;
      }
      if (c === "&" && s[i + 1] === ">") {
        endWord();
        word = "&";
        inWord = true;
        continue;
      }
      if ((c === "&" || c === "|") && s[i + 1] === c) op = s.slice(i, ++i + 1);
      else if (c === "|" && s[i + 1] === "&") op = s.slice(i, ++i + 1);
      else if (c === ";" && s[i + 1] === ";") return { ok: false, why: "it uses ;; (a case statement)" };
      const problem = endCommand(op);
      if (problem) return { ok: false, why: problem };
      // An operator that needs a command after it (`a &&`, `a |`) at the very end is incomplete.
      if (op !== ";" && op !== "&" && op !== "\n" && !s.slice(i + 1).trim()) return { ok: false, why: `it ends with ${op}` };
    } else {
      word += c;
      inWord = true;
      if (c === "<" || c === ">") redirEnd = c;
    }
  }
  const problem = endCommand("end");
  if (problem) return { ok: false, why: problem };
  if (!commands.length) return { ok: false, why: "it is empty" };
  return { ok: true, commands };
}

/**
 * A simple command (or a policy pattern written like one) taken apart at its redirections: the text between them and
 * each operator with its file descriptor (`>`, `>>`, `2>`, `&>`, `>&`, `<`, `>|`…), quotes and escapes respected. A
 * pattern approves a command with a redirection only when it spells the same operators in the same places, so a glob
 * (`npm test*`) never stretches over `> ~/.bashrc`.
 */
export function redirectionParts(simple: string): { texts: string[]; ops: string[] } {
  const s = String(simple ?? "");
  const texts: string[] = [];
  const ops: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "'") {
      const end = s.indexOf("'", i + 1);
      const to = end < 0 ? s.length - 1 : end;
      cur += s.slice(i, to + 1);
      i = to;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < s.length && s[j] !== '"'; j++) if (s[j] === "\\") j++;
      cur += s.slice(i, j + 1);
      i = j;
    } else if (c === "\\") {
      cur += s.slice(i, i + 2);
      i++;
    } else if (c === "<" || c === ">") {
      // A file descriptor number or `&` written right before it, at the start of a word, is part of the operator.
      const fd = /(?:^|\s)(\d+|&)$/.exec(cur)?.[1] ?? "";
      cur = cur.slice(0, cur.length - fd.length);
      let j = i;
      while (j < s.length && "<>&|".includes(s[j]!)) j++;
      if (s[j] === "-" && s[j - 1] === "&") j++;
      ops.push(fd + s.slice(i, j));
      texts.push(cur);
      cur = "";
      i = j - 1;
    } else cur += c;
  }
  texts.push(cur);
  return { texts, ops };
}
