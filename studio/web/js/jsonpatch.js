// JSON Patch (RFC 6902) over JSON Pointers (RFC 6901): what STATE_DELTA
// and ACTIVITY_DELTA carry. applyPatch never changes the document it is
// given, and says which paths each operation touched, so a view can mark
// them.

export class PatchError extends Error {}

// parsePointer splits a JSON Pointer into its unescaped tokens.
export function parsePointer(pointer) {
  if (pointer === "") return [];
  if (typeof pointer !== "string" || !pointer.startsWith("/")) {
    throw new PatchError(`${JSON.stringify(pointer)} is not a JSON Pointer: it must be empty or start with /`);
  }
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

// pointer joins tokens into a JSON Pointer.
export function pointer(tokens) {
  return tokens.map((t) => "/" + String(t).replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}

// applyPatch applies ops to a copy of doc and returns {doc, touched}: the
// new document, and the pointers the operations changed (for a removal,
// the container it removed from). An operation that does not apply throws
// a PatchError that names it.
export function applyPatch(doc, ops) {
  if (!Array.isArray(ops)) throw new PatchError("a patch must be an array of operations");
  let root = structuredClone(doc);
  const touched = [];
  ops.forEach((op, i) => {
    try {
      root = applyOp(root, op, touched);
    } catch (err) {
      if (err instanceof PatchError) throw new PatchError(`operation ${i} (${op?.op} ${op?.path}): ${err.message}`);
      throw err;
    }
  });
  return { doc: root, touched };
}

function applyOp(root, op, touched) {
  if (op === null || typeof op !== "object") throw new PatchError("not an object");
  const path = parsePointer(op.path);
  switch (op.op) {
    case "add": {
      const [doc, at] = add(root, path, structuredClone(op.value));
      touched.push(pointer(at));
      return doc;
    }
    case "remove": {
      const doc = remove(root, path);
      touched.push(pointer(path.slice(0, -1)));
      return doc;
    }
    case "replace": {
      const doc = replace(root, path, structuredClone(op.value));
      touched.push(pointer(path));
      return doc;
    }
    case "move": {
      const from = parsePointer(op.from);
      if (path.length > from.length && from.every((t, i) => t === path[i])) {
        throw new PatchError("cannot move a value into itself");
      }
      const value = get(root, from);
      const [doc, at] = add(remove(root, from), path, value);
      touched.push(pointer(from.slice(0, -1)), pointer(at));
      return doc;
    }
    case "copy": {
      const [doc, at] = add(root, path, structuredClone(get(root, parsePointer(op.from))));
      touched.push(pointer(at));
      return doc;
    }
    case "test":
      if (!equal(get(root, path), op.value)) throw new PatchError("the value is not the one the test expects");
      return root;
    default:
      throw new PatchError(`unknown operation ${JSON.stringify(op.op)}`);
  }
}

// get is the value at path; it throws when there is none.
function get(doc, path) {
  let v = doc;
  for (const t of path) {
    if (Array.isArray(v)) {
      v = v[index(t, v.length - 1)];
    } else if (v !== null && typeof v === "object" && Object.hasOwn(v, t)) {
      v = v[t];
    } else {
      throw new PatchError(`no value at ${pointer(path)}`);
    }
  }
  return v;
}

// add puts value at path (inserting into arrays) and returns the document
// and the path it went to ("-" resolved to the index).
function add(root, path, value) {
  if (path.length === 0) return [value, path];
  const parent = get(root, path.slice(0, -1));
  const last = path.at(-1);
  if (Array.isArray(parent)) {
    const i = last === "-" ? parent.length : index(last, parent.length);
    parent.splice(i, 0, value);
    return [root, [...path.slice(0, -1), String(i)]];
  }
  if (parent === null || typeof parent !== "object") throw new PatchError(`${pointer(path.slice(0, -1))} is not an object or an array`);
  parent[last] = value;
  return [root, path];
}

function replace(root, path, value) {
  if (path.length === 0) return value;
  const parent = get(root, path.slice(0, -1));
  const last = path.at(-1);
  if (Array.isArray(parent)) {
    parent[index(last, parent.length - 1)] = value;
  } else if (parent !== null && typeof parent === "object" && Object.hasOwn(parent, last)) {
    parent[last] = value;
  } else {
    throw new PatchError(`no value at ${pointer(path)}`);
  }
  return root;
}

function remove(root, path) {
  if (path.length === 0) return null;
  const parent = get(root, path.slice(0, -1));
  const last = path.at(-1);
  if (Array.isArray(parent)) {
    parent.splice(index(last, parent.length - 1), 1);
  } else if (parent !== null && typeof parent === "object" && Object.hasOwn(parent, last)) {
    delete parent[last];
  } else {
    throw new PatchError(`no value at ${pointer(path)}`);
  }
  return root;
}

// index reads an array index token of at most max.
function index(token, max) {
  if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) > max) {
    throw new PatchError(`${JSON.stringify(token)} is not an index of the array (0 to ${max})`);
  }
  return Number(token);
}

// equal compares JSON values.
function equal(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}
