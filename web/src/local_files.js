// An artifact from the user's disk: the files of a picked folder (`<input type="file"
// webkitdirectory>`, or any File list) served to the loader as if fetched from `base`, so
// nothing is downloaded. Paths are relative to the artifact folder (its mlcx-config.json).

const BASE = "https://local-artifact.invalid/";

// File -> its path inside the picked folder, without the folder's own name.
function relativePath(file) {
  const path = file.webkitRelativePath || file.name;
  return path.includes("/") ? path.slice(path.indexOf("/") + 1) : path;
}

// -> {base, fetchFn}: what CreateMLCEngine's `files` option becomes.
export function localArtifact(files) {
  const byPath = new Map(Array.from(files, (f) => [relativePath(f), f]));
  if (!byPath.has("mlcx-config.json")) {
    throw new Error("the picked files hold no mlcx-config.json: pick the folder `mlcx compile` wrote");
  }
  const fetchFn = async (url) => {
    const path = decodeURIComponent(new URL(url).href.slice(BASE.length));
    const file = byPath.get(path);
    if (!file) return new Response(null, { status: 404, statusText: `${path} is not among the picked files` });
    return new Response(file, { headers: { "Content-Length": String(file.size) } });
  };
  return { base: new URL(BASE), fetchFn };
}
