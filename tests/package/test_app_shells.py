"""`mlcx package --app both`: the Android and iOS projects are complete and well-formed: their
Kotlin and Swift sources parse (tree-sitter grammars), the Gradle, manifest, Info.plist and
Xcode project files load with real parsers, every object the Xcode project refers to exists,
and each project reaches the package's www/ and bundle/ where they lie."""

from __future__ import annotations

import json
import plistlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mlcx.package.app_shells import APP_SHELLS, resolve_apps
from tests.support.syntax_trees import syntax_errors

ANDROID_NS = "{http://schemas.android.com/apk/res/android}"
SOURCES = {"android": ("*.kt", "*.kts"), "ios": ("*.swift",)}


def _sources(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    return sorted(p for pattern in patterns for p in folder.rglob(pattern))


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_sources_parse(app_dist, kind):
    files = _sources(app_dist / kind, SOURCES[kind])
    assert len(files) >= 4
    assert [e for f in files for e in syntax_errors(f)] == []
    text = "\n".join(f.read_text() for f in files)
    assert "@@" not in text  # every placeholder filled


def test_android_project(app_dist):
    root = app_dist / "android"
    manifest = ET.parse(root / "app/src/main/AndroidManifest.xml").getroot()
    app = manifest.find("application")
    assert app.get(f"{ANDROID_NS}label") == "Tiny Chat"
    [activity] = app.findall("activity")
    assert activity.get(f"{ANDROID_NS}name") == ".MainActivity"
    assert (root / "app/src/main/java/org/mlcx/shell/MainActivity.kt").is_file()
    gradle = (root / "app/build.gradle.kts").read_text()
    assert 'applicationId = "org.example.tinychat"' in gradle
    for folder in ("www", "bundle"):  # the assets sync reads the package's own folders
        assert f'from("../../{folder}")' in gradle and (root / "app" / "../.." / folder).is_dir()
    assert 'include(":app")' in (root / "settings.gradle.kts").read_text()
    bridge = (root / "app/src/main/java/org/mlcx/shell/ChatBridge.kt").read_text()
    assert (
        '"mlcxAndroid"' in bridge and "mlcxAndroid" in (app_dist / "www/src/bridge.js").read_text()
    )


def _pbxproj(app_dist: Path) -> dict:
    return plistlib.loads((app_dist / "ios/MlcxChat.xcodeproj/project.pbxproj").read_bytes())


def _references(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [r for v in value for r in _references(v)]
    return []


def test_xcode_project_is_a_complete_object_graph(app_dist):
    project = _pbxproj(app_dist)
    objects = project["objects"]
    keys = ("children", "files", "fileRef", "buildPhases", "targets", "mainGroup",
            "buildConfigurationList", "buildConfigurations", "productReference")  # fmt: skip
    for obj in objects.values():
        for key in keys:
            missing = [r for r in _references(obj.get(key, [])) if r not in objects]
            assert missing == [], (obj["isa"], key)
    root = objects[project["rootObject"]]
    [target] = (objects[t] for t in root["targets"])
    phases = {objects[p]["isa"]: objects[p] for p in target["buildPhases"]}
    sources = [
        objects[objects[b]["fileRef"]]["path"] for b in phases["PBXSourcesBuildPhase"]["files"]
    ]
    on_disk = sorted(p.name for p in (app_dist / "ios/MlcxChat").glob("*.swift"))
    assert sorted(sources) == on_disk and "ChatBridge.swift" in on_disk
    resources = [objects[objects[b]["fileRef"]] for b in phases["PBXResourcesBuildPhase"]["files"]]
    for ref in resources:
        assert ref["lastKnownFileType"] == "folder" and ref["sourceTree"] == "SOURCE_ROOT"
        assert (app_dist / "ios" / ref["path"]).resolve() in {
            (app_dist / "www").resolve(),
            (app_dist / "bundle").resolve(),
        }
    assert len(resources) == 2
    settings = [
        objects[c]["buildSettings"]
        for c in objects[target["buildConfigurationList"]]["buildConfigurations"]
    ]
    assert {s["PRODUCT_BUNDLE_IDENTIFIER"] for s in settings} == {"org.example.tinychat"}
    assert all((app_dist / "ios" / s["INFOPLIST_FILE"]).is_file() for s in settings)


def test_info_plist(app_dist):
    info = plistlib.loads((app_dist / "ios/MlcxChat/Info.plist").read_bytes())
    assert info["CFBundleDisplayName"] == "Tiny Chat"
    assert info["CFBundleIdentifier"] == "$(PRODUCT_BUNDLE_IDENTIFIER)"


def test_app_config_lists_models_memory_and_weights(app_dist):
    [model] = json.loads((app_dist / "www/mlcx-app.json").read_text())["models"]
    bundle = json.loads((app_dist / "bundle/mlcx-app-config.json").read_text())["models"][0]
    assert (
        model["id"] == "tiny"
        and model["estimated_memory_bytes"] == bundle["estimated_memory_bytes"]
    )
    assert [v["weights_bundled"] for v in model["variants"]] == [True, True]


def test_app_kinds():
    assert resolve_apps("both") == tuple(APP_SHELLS) == ("ios", "android")
    assert resolve_apps(None) == ()
    with pytest.raises(ValueError, match="choose one of: ios, android, both"):
        resolve_apps("windows")


def test_unknown_app_kind_is_refused_by_the_cli(tmp_path):
    from tests.support.cli import run_mlcx_here

    result = run_mlcx_here("package", str(tmp_path / "package.json"), "--app", "windows")
    assert result.returncode != 0
    message = " ".join(result.stderr.replace("│", " ").split())  # unwrap the error box
    assert "unknown app kind 'windows'; choose one of: ios, android, both" in message


def test_downloaded_weights_need_a_url_before_anything_compiles(tmp_path):
    from mlcx.package.build import build_package
    from mlcx.package.config import PackageConfig

    model = {"id": "m", "source": "smollm2-135m", "bundle_weights": False}
    config = PackageConfig.from_dict({"device": "android", "models": [model]}, tmp_path)
    with pytest.raises(ValueError, match="model m: bundle_weights is false.*weights_url"):
        build_package(config, tmp_path / "dist", apps=("android",))
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize(
    ("app", "says"),
    [
        ({"id": "org.my_app"}, "app id 'org.my_app'"),  # iOS bundle ids have no "_"
        ({"id": "chat"}, "app id 'chat'"),
        ({"name": 'Chat"; rm'}, "app name"),  # goes into Kotlin, XML and plist text
        ({"title": "x"}, "'app' is an object with 'name' and 'id'"),
    ],
)
def test_bad_app_identity_is_refused(tmp_path, app, says):
    from mlcx.package.config import PackageConfig

    data = {"device": "android", "app": app, "models": [{"id": "m", "source": "x"}]}
    with pytest.raises(ValueError, match=re.escape(says)):
        PackageConfig.from_dict(data, tmp_path)
