/** The absolute path of this platform's retrygen binary (or of RETRYGEN_BINARY when set). */
export declare function binaryPath(): string;
/** This platform as retrygen's packages name it: `linux x64 glibc`, `darwin arm64`... */
export declare function platformKey(): string;
