import Foundation

/// One model of www/mlcx-app.json, the app config `mlcx package --app` writes.
struct AppModel: Decodable, Identifiable {
    struct Variant: Decodable {
        let quantization: String
        let features: [String]
        let weightsBundled: Bool
        let weightsBytes: Int64
    }

    let id: String
    let name: String
    let estimatedMemoryBytes: Int64
    let contextWindow: Int
    let variants: [Variant]
    let images: Bool?  // it has an image encoder (absent from older app configs)

    var label: String {
        let megabytes = estimatedMemoryBytes / 1_048_576
        let weights = variants.first?.weightsBundled == false ? "downloaded" : "bundled"
        let input = images == true ? "text and images" : "text only"
        return "\(name) · \(megabytes) MB · weights \(weights) · \(input)"
    }
}

enum ModelCatalog {
    private struct File: Decodable {
        let models: [AppModel]
    }

    static func load(from resources: URL = Bundle.main.resourceURL!) -> [AppModel] {
        let url = resources.appendingPathComponent("www/mlcx-app.json")
        guard let data = try? Data(contentsOf: url) else { return [] }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return (try? decoder.decode(File.self, from: data))?.models ?? []
    }
}
