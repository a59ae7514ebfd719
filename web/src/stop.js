// Stop strings over streamed text, as mlcx/runtime/text/stop.py: text that might begin a stop
// string is held back until the next delta settles it; on a hit the text is cut right before
// it. Of several, the one whose end comes first wins (ties: the one starting first).

function firstStop(text, stops) {
  let best = null;
  for (const stop of stops) {
    const start = text.indexOf(stop);
    if (start < 0) continue;
    const end = start + stop.length;
    if (best === null || end < best.end || (end === best.end && start < best.start)) best = { end, start, stop };
  }
  return best;
}

// Length of the longest suffix of `text` that is a proper prefix of a stop string.
function partialSuffix(text, stops) {
  let longest = 0;
  for (const stop of stops) {
    for (let n = Math.min(stop.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(stop.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

export class StopStringMatcher {
  constructor(stops) {
    this.stops = [...new Set(stops)];
    this.held = "";
    this.stopped = null;
  }

  // -> {text: safe to emit now, stop: the stop string hit or null}
  feed(delta) {
    if (this.stopped !== null) throw new Error(`a stop string (${this.stopped}) was already hit`);
    const text = this.held + delta;
    const found = firstStop(text, this.stops);
    if (found) {
      this.held = "";
      this.stopped = found.stop;
      return { text: text.slice(0, found.start), stop: found.stop };
    }
    const keep = partialSuffix(text, this.stops);
    this.held = keep ? text.slice(text.length - keep) : "";
    return { text: text.slice(0, text.length - keep), stop: null };
  }

  flush() {
    const held = this.held;
    this.held = "";
    return held;
  }
}
