// Server-sent events read from a fetch body: the run routes answer a POST
// with a stream, which EventSource cannot send, so the studio parses the
// frames itself (the WHATWG format: "data:" lines joined, "id:", comment
// lines ignored, frames ended by a blank line).

// frames yields {id, data} for every frame of body that has data.
export async function* frames(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      pending += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (let m; (m = /\r\n\r\n|\n\n|\r\r/.exec(pending)); ) {
        const frame = parse(pending.slice(0, m.index));
        pending = pending.slice(m.index + m[0].length);
        if (frame) yield frame;
      }
      if (done) break;
    }
    const last = parse(pending);
    if (last) yield last;
  } finally {
    reader.cancel().catch(() => {});
  }
}

// parse reads one frame's text; undefined for a frame with no data.
export function parse(text) {
  let id;
  const data = [];
  for (const line of text.split(/\r\n|\n|\r/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  return data.length ? { id, data: data.join("\n") } : undefined;
}
