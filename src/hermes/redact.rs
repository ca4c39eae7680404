//! STUB (assemble's local stand-in, never committed).
pub fn redact_sensitive_text(s: &str) -> String {
    s.replace("sk-SECRET", "sk-***")
}
