// swift-tools-version:6.0
// HackMatrix headless game, written from ../../docs/rules/ (see specs/swift.md).
// No outside packages: builds on Linux with the Swift toolchain alone.
import PackageDescription

let package = Package(
    name: "HackMatrixSwift",
    products: [
        .library(name: "HackMatrixCore", targets: ["HackMatrixCore"]),
        .executable(name: "hackmatrix-headless", targets: ["hackmatrix-headless"]),
    ],
    targets: [
        .target(name: "HackMatrixCore"),
        .executableTarget(name: "hackmatrix-headless", dependencies: ["HackMatrixCore"]),
        .testTarget(name: "HackMatrixCoreTests", dependencies: ["HackMatrixCore", "hackmatrix-headless"]),
    ],
    swiftLanguageModes: [.v6]
)
