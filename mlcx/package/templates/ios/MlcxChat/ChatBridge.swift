import Foundation
import WebKit

/// The native chat API over the page's runtime: load a model, send a message, with an image
/// where the model takes images (its tokens stream back through `onToken`), reset the
/// conversation. Events are the page's (web/src/bridge.js): status (kernels, weights download
/// progress), ready (with `images`), token, done, error.
@MainActor
final class ChatBridge: NSObject, ObservableObject, WKScriptMessageHandler {
    @Published private(set) var status = "loading…"
    @Published private(set) var isReady = false
    @Published private(set) var takesImages = false
    @Published private(set) var reply = ""
    var onToken: ((String) -> Void)?
    var onDone: ((String) -> Void)?
    let webView: WKWebView

    override init() {
        let configuration = WKWebViewConfiguration()
        configuration.setURLSchemeHandler(DistSchemeHandler(), forURLScheme: DistSchemeHandler.scheme)
        webView = WKWebView(frame: .zero, configuration: configuration)
        super.init()
        // The controller keeps the bridge alive as long as the web view: one per screen.
        webView.configuration.userContentController.add(self, name: "mlcx")
    }

    func loadModel(_ modelID: String) {
        isReady = false
        takesImages = false
        status = "loading \(modelID)…"
        webView.load(URLRequest(url: DistSchemeHandler.pageURL(modelID: modelID)))
    }

    /// `jpeg`: an image to send with the text (the page reads it as a data: URL).
    func send(_ text: String, jpeg: Data? = nil) {
        guard isReady, !text.isEmpty,
            let json = try? JSONSerialization.data(withJSONObject: text, options: .fragmentsAllowed),
            let literal = String(data: json, encoding: .utf8)
        else { return }
        // base64 needs no escaping inside a JavaScript string
        let options =
            jpeg.map { "{image: \"data:image/jpeg;base64,\($0.base64EncodedString())\"}" } ?? "{}"
        reply = ""
        isReady = false
        webView.evaluateJavaScript("void window.mlcx.chat(\(literal), \(options))")
    }

    func reset() {
        reply = ""
        webView.evaluateJavaScript("window.mlcx.reset()")
    }

    func userContentController(
        _ controller: WKUserContentController, didReceive message: WKScriptMessage
    ) {
        guard let event = message.body as? [String: Any], let type = event["type"] as? String
        else { return }
        handle(type, event)
    }

    private func handle(_ type: String, _ event: [String: Any]) {
        switch type {
        case "token":
            let text = event["text"] as? String ?? ""
            reply += text
            onToken?(text)
        case "done":
            isReady = true
            onDone?(reply)
        case "ready":
            isReady = true
            takesImages = event["images"] as? Bool ?? false
            status = Self.readyLine(event)
        case "error":
            status = event["message"] as? String ?? "error"
        default:
            status = Self.statusLine(event) ?? status
        }
    }

    private static func readyLine(_ event: [String: Any]) -> String {
        let model = event["model"] as? String ?? ""
        let quantization = event["quantization"] as? String ?? ""
        let pages = event["kvBlocks"] as? Int ?? 0
        let note = (event["note"] as? String).map { " · \($0)" } ?? ""
        return "\(model) · \(quantization) · \(pages) KV pages\(note)"
    }

    private static func statusLine(_ event: [String: Any]) -> String? {
        let done = event["done"] as? Double ?? 0
        let total = event["total"] as? Double ?? 0
        switch event["stage"] as? String {
        case "weights":
            return String(format: "weights %.1f / %.1f MB", done / 1_048_576, total / 1_048_576)
        case "kernels":
            return "compiling kernels \(Int(done))/\(Int(total))"
        default:
            return nil
        }
    }
}
