// The engine's console output, filtered by WebLLM's log levels (setLogLevel, engine config
// `logLevel`). One level per JS realm, as WebLLM's loglevel keeps it: a worker's engine has
// its own, which the page's proxy sets by message.

import { InvalidRequestError } from "./errors.js";

export const LOG_LEVELS = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4, SILENT: 5 };
export const DEFAULT_LOG_LEVEL = "WARN";

let current = LOG_LEVELS[DEFAULT_LOG_LEVEL];

export function setLogLevel(level) {
  if (!Object.hasOwn(LOG_LEVELS, level)) {
    throw new InvalidRequestError(`logLevel must be one of ${Object.keys(LOG_LEVELS).join(", ")}, got ${JSON.stringify(level)}`, "logLevel");
  }
  current = LOG_LEVELS[level];
}

export const getLogLevel = () => Object.keys(LOG_LEVELS).find((k) => LOG_LEVELS[k] === current);

const at = (level, write) => (...args) => {
  if (LOG_LEVELS[level] >= current) write(`mlcx-web [${level}]`, ...args);
};

export const log = {
  trace: at("TRACE", (...a) => console.debug(...a)),
  debug: at("DEBUG", (...a) => console.debug(...a)),
  info: at("INFO", (...a) => console.info(...a)),
  warn: at("WARN", (...a) => console.warn(...a)),
  error: at("ERROR", (...a) => console.error(...a)),
};
