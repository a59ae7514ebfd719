import Foundation
import WebKit

/// Serves the app bundle's www/ and bundle/ folders (dist/www and dist/bundle, added to the
/// app as folder references) under one origin, mlcx-app://local/, in the layout
/// `mlcx package --app` writes: the page at /www/, a model's weights at /bundle/<id>/params/.
final class DistSchemeHandler: NSObject, WKURLSchemeHandler {
    static let scheme = "mlcx-app"
    static let origin = "\(scheme)://local"
    static let mimeTypes = [
        "html": "text/html",
        "js": "text/javascript",
        "mjs": "text/javascript",
        "css": "text/css",
        "json": "application/json",
        "wgsl": "text/plain",
    ]
    private let root: URL

    init(root: URL = Bundle.main.resourceURL!) {
        self.root = root.standardizedFileURL
    }

    static func pageURL(modelID: String) -> URL {
        var components = URLComponents(string: "\(origin)/www/index.html")!
        components.queryItems = [
            URLQueryItem(name: "app", value: "mlcx-app.json"),
            URLQueryItem(name: "model", value: modelID),
            URLQueryItem(name: "composer", value: "native"),
        ]
        return components.url!
    }

    func webView(_ webView: WKWebView, start task: WKURLSchemeTask) {
        guard let url = task.request.url, let file = resolve(url.path) else {
            respond(task, status: 404, type: "text/plain", body: Data("not found".utf8))
            return
        }
        do {
            let data = try Data(contentsOf: file, options: .mappedIfSafe)
            let type = Self.mimeTypes[file.pathExtension] ?? "application/octet-stream"
            respond(task, status: 200, type: type, body: data)
        } catch {
            task.didFailWithError(error)
        }
    }

    func webView(_ webView: WKWebView, stop task: WKURLSchemeTask) {}

    /// Only files under www/ and bundle/ of the app's resources, never outside them.
    private func resolve(_ path: String) -> URL? {
        guard path.hasPrefix("/www/") || path.hasPrefix("/bundle/") else { return nil }
        let file = root.appendingPathComponent(path).standardizedFileURL
        guard file.path.hasPrefix(root.path + "/") else { return nil }
        return FileManager.default.fileExists(atPath: file.path) ? file : nil
    }

    private func respond(_ task: WKURLSchemeTask, status: Int, type: String, body: Data) {
        let headers = ["Content-Type": type, "Content-Length": String(body.count)]
        let response = HTTPURLResponse(
            url: task.request.url!, statusCode: status, httpVersion: "HTTP/1.1",
            headerFields: headers)!
        task.didReceive(response)
        task.didReceive(body)
        task.didFinish()
    }
}
