/**
 * The `next` link of an HTTP Link header (RFC 8288), which git hosts page their listings with: the git
 * searches ask whether there is one, the callback processors follow it. The header is the host's words:
 * read, never trusted.
 */

/** One parameter of a link: a token name, and a value quoted (with backslash escapes) or bare. */
const PARAM = /\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^;,\s]*)))?\s*/y;

/**
 * The target of the first link whose `rel` names `next` (any case, among other relations), or null.
 * Read link by link (`<target>` then `;`-separated parameters, links separated by commas), a quoted
 * value as one value: a `title` that looks like a link is not one. A header not of this form: the next
 * link read before the fault, else null.
 */
export function nextLinkOf(header: string | null): string | null {
  if (!header) return null;
  let at = 0;
  while (at < header.length) {
    while (at < header.length && (header[at] === ',' || /\s/.test(header[at]!))) at++;
    if (at >= header.length || header[at] !== '<') return null;
    const close = header.indexOf('>', at);
    if (close < 0) return null;
    const target = header.slice(at + 1, close);
    at = close + 1;
    let relations: string[] = [];
    for (;;) {
      while (at < header.length && /\s/.test(header[at]!)) at++;
      if (header[at] !== ';') break;
      // An empty parameter (`;;`, a `;` before the next link or the end) is passed over, as hosts send it.
      let next = at + 1;
      while (next < header.length && /\s/.test(header[next]!)) next++;
      if (next >= header.length || header[next] === ';' || header[next] === ',') {
        at = next;
        continue;
      }
      PARAM.lastIndex = at + 1;
      const param = PARAM.exec(header);
      if (!param) return null;
      at = PARAM.lastIndex;
      // The first rel counts (RFC 8288 3.3); relation types are compared without case.
      if (param[1]!.toLowerCase() === 'rel' && relations.length === 0)
        relations = (param[2] ?? param[3] ?? '').replace(/\\(.)/g, '$1').toLowerCase().split(/\s+/);
    }
    if (target && relations.includes('next')) return target;
    if (at < header.length && header[at] !== ',') return null;
  }
  return null;
}
