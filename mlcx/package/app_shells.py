"""App projects that host dist/www in a WebView (`mlcx package --app ios|android|both`).

Each shell is a template folder under mlcx/package/templates/<kind>/, copied to dist/<kind>
with the app's name and id filled in. The projects refer to dist/www and dist/bundle where
they lie (`../www`, `../bundle`) and copy them into the app when it is built, so the package
holds every file once. docs/packaging.md says why the WebView path and how to run each one.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mlcx.package.config import AppIdentity
from mlcx.package.xcodeproj import write_xcodeproj

TEMPLATES = Path(__file__).resolve().parent / "templates"
BOTH = "both"


@dataclass(frozen=True)
class AppShell:
    kind: str
    template: str  # folder under TEMPLATES
    description: str
    # what is generated rather than templated (the Xcode project's object graph)
    finish: Callable[[Path, AppIdentity], object] | None = None

    def write(self, out: Path, app: AppIdentity, www_config: Path) -> None:
        """Renders the template into `out` (replacing it); www_config only has to exist."""
        if not www_config.is_file():
            raise FileNotFoundError(f"{www_config}: build dist/www before the app projects")
        shutil.rmtree(out, ignore_errors=True)
        source = TEMPLATES / self.template
        values = {"@@APP_NAME@@": app.name, "@@APP_ID@@": app.id}
        for path in sorted(source.rglob("*")):
            if path.is_file():
                target = out / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(_fill(path.read_text(), values))
        if self.finish is not None:
            self.finish(out, app)


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


APP_SHELLS: dict[str, AppShell] = {
    shell.kind: shell
    for shell in (
        AppShell("ios", "ios", "Xcode project in Swift, WKWebView host (iOS 26+)", write_xcodeproj),
        AppShell("android", "android", "Gradle project in Kotlin, WebView host (Chrome 121+)"),
    )
}


def resolve_apps(value: str | None) -> tuple[str, ...]:
    """The --app value as shell kinds: one kind, or every kind for "both"."""
    if value is None:
        return ()
    if value == BOTH:
        return tuple(APP_SHELLS)
    if value not in APP_SHELLS:
        choices = ", ".join([*APP_SHELLS, BOTH])
        raise ValueError(f"unknown app kind {value!r}; choose one of: {choices}")
    return (value,)
