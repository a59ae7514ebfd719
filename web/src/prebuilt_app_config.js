// WebLLM's `prebuiltAppConfig`: the models a page may load by id. The package lists none (it
// cannot know where artifacts are hosted): pass your own `appConfig`, or serve the page with
// `mlcx web`, which answers this file with the artifacts it serves (mlcx/web/app_config.py).

export const prebuiltAppConfig = { cacheBackend: "cache", model_list: [] };
