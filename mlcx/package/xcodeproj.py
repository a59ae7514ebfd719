"""`dist/ios/MlcxChat.xcodeproj/project.pbxproj`: the iOS app target, written as an XML
property list (Xcode reads a project file in any plist format and keeps its own on save),
so that any plist parser can check it.

One app target: the Swift sources of MlcxChat/, its Info.plist, and two folder references,
`../www` and `../bundle`, copied whole into the app's resources (the scheme handler serves
them from there). Object ids are derived from the object's role, so the file is the same
for the same sources.
"""

from __future__ import annotations

import hashlib
import plistlib
from pathlib import Path

from mlcx.package.config import AppIdentity

TARGET = "MlcxChat"
DEPLOYMENT_TARGET = "26.0"  # WKWebView exposes WebGPU from iOS 26
RESOURCE_FOLDERS = ("www", "bundle")  # dist siblings of the project folder


def _id(role: str) -> str:
    return hashlib.sha1(role.encode()).hexdigest()[:24].upper()


def _configurations(objects: dict, owner: str, settings: dict[str, str]) -> str:
    ids = []
    for name in ("Debug", "Release"):
        config_id = _id(f"{owner}/config/{name}")
        extra = {"SWIFT_OPTIMIZATION_LEVEL": "-Onone"} if name == "Debug" else {}
        objects[config_id] = {
            "isa": "XCBuildConfiguration",
            "name": name,
            "buildSettings": {**settings, **extra},
        }
        ids.append(config_id)
    list_id = _id(f"{owner}/configurations")
    objects[list_id] = {
        "isa": "XCConfigurationList",
        "buildConfigurations": ids,
        "defaultConfigurationIsVisible": "0",
        "defaultConfigurationName": "Release",
    }
    return list_id


def _file(objects: dict, role: str, kind: str, **fields: str) -> str:
    file_id = _id(f"file/{role}")
    objects[file_id] = {"isa": "PBXFileReference", "lastKnownFileType": kind, **fields}
    return file_id


def _phase(objects: dict, isa: str, file_ids: list[str]) -> str:
    build_ids = []
    for file_id in file_ids:
        build_id = _id(f"build/{isa}/{file_id}")
        objects[build_id] = {"isa": "PBXBuildFile", "fileRef": file_id}
        build_ids.append(build_id)
    phase_id = _id(f"phase/{isa}")
    objects[phase_id] = {
        "isa": isa,
        "buildActionMask": "2147483647",
        "files": build_ids,
        "runOnlyForDeploymentPostprocessing": "0",
    }
    return phase_id


def _group(objects: dict, role: str, children: list[str], **fields: str) -> str:
    group_id = _id(f"group/{role}")
    objects[group_id] = {"isa": "PBXGroup", "children": children, "sourceTree": "<group>", **fields}
    return group_id


def project(sources: list[str], app: AppIdentity) -> dict:
    """The project file's dictionary for the Swift files `sources` (names in MlcxChat/)."""
    objects: dict = {}
    swift = [_file(objects, s, "sourcecode.swift", path=s, sourceTree="<group>") for s in sources]
    plist = _file(objects, "Info.plist", "text.plist.xml", path="Info.plist", sourceTree="<group>")
    folders = [
        _file(objects, f, "folder", name=f, path=f"../{f}", sourceTree="SOURCE_ROOT")
        for f in RESOURCE_FOLDERS
    ]
    product = _id("file/product")
    objects[product] = {
        "isa": "PBXFileReference",
        "explicitFileType": "wrapper.application",
        "includeInIndex": "0",
        "path": f"{TARGET}.app",
        "sourceTree": "BUILT_PRODUCTS_DIR",
    }
    code = _group(objects, TARGET, [*swift, plist], path=TARGET)
    products = _group(objects, "Products", [product], name="Products")
    main = _group(objects, "main", [code, *folders, products])
    phases = [
        _phase(objects, "PBXSourcesBuildPhase", swift),
        _phase(objects, "PBXFrameworksBuildPhase", []),
        _phase(objects, "PBXResourcesBuildPhase", folders),
    ]
    target = _id("target")
    objects[target] = {
        "isa": "PBXNativeTarget",
        "buildConfigurationList": _configurations(objects, "target", _target_settings(app)),
        "buildPhases": phases,
        "buildRules": [],
        "dependencies": [],
        "name": TARGET,
        "productName": TARGET,
        "productReference": product,
        "productType": "com.apple.product-type.application",
    }
    root = _id("project")
    objects[root] = {
        "isa": "PBXProject",
        "attributes": {"BuildIndependentTargetsInParallel": "1", "LastUpgradeCheck": "2600"},
        "buildConfigurationList": _configurations(objects, "project", _project_settings()),
        "compatibilityVersion": "Xcode 14.0",
        "developmentRegion": "en",
        "hasScannedForEncodings": "0",
        "knownRegions": ["en", "Base"],
        "mainGroup": main,
        "productRefGroup": products,
        "projectDirPath": "",
        "projectRoot": "",
        "targets": [target],
    }
    return {
        "archiveVersion": "1",
        "classes": {},
        "objectVersion": "56",
        "objects": objects,
        "rootObject": root,
    }


def _project_settings() -> dict[str, str]:
    return {
        "SDKROOT": "iphoneos",
        "IPHONEOS_DEPLOYMENT_TARGET": DEPLOYMENT_TARGET,
        "SWIFT_VERSION": "5.0",
        "CLANG_ENABLE_MODULES": "YES",
        "ENABLE_USER_SCRIPT_SANDBOXING": "YES",
    }


def _target_settings(app: AppIdentity) -> dict[str, str]:
    return {
        "PRODUCT_NAME": "$(TARGET_NAME)",
        "PRODUCT_BUNDLE_IDENTIFIER": app.id,
        "INFOPLIST_FILE": f"{TARGET}/Info.plist",
        "GENERATE_INFOPLIST_FILE": "NO",
        "CODE_SIGN_STYLE": "Automatic",
        "TARGETED_DEVICE_FAMILY": "1,2",
        "SWIFT_VERSION": "5.0",
        "CURRENT_PROJECT_VERSION": "1",
        "MARKETING_VERSION": "1.0",
    }


def write_xcodeproj(out: Path, app: AppIdentity) -> Path:
    """Writes out/MlcxChat.xcodeproj for the Swift files already in out/MlcxChat/."""
    sources = sorted(p.name for p in (out / TARGET).glob("*.swift"))
    path = out / f"{TARGET}.xcodeproj" / "project.pbxproj"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(plistlib.dumps(project(sources, app), fmt=plistlib.FMT_XML, sort_keys=True))
    return path
