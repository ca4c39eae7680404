//! Tiny `{placeholder}` templates, parsed once and rendered in a single pass (a
//! substituted value is never scanned for placeholders again).

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `{name}` placeholders; names are ASCII letters, digits and `_`. Any other
    /// brace is literal text.
    pub fn parse(src: &str) -> Self {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = src;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let close = after.find('}');
            let name = close.map(|c| &after[..c]);
            match name {
                Some(n)
                    if !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
                {
                    lit.push_str(&rest[..open]);
                    if !lit.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Var(n.to_string()));
                    rest = &after[n.len() + 1..];
                }
                _ => {
                    lit.push_str(&rest[..=open]);
                    rest = after;
                }
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Literal(lit));
        }
        Template { parts }
    }

    /// Placeholder names used, in order.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Appends the rendering to `out`; `value` supplies each placeholder (unknown
    /// placeholders render as nothing).
    pub(crate) fn render_into<'v>(
        &self,
        out: &mut String,
        value: impl Fn(&str) -> Option<&'v str>,
    ) {
        for p in &self.parts {
            match p {
                Part::Literal(s) => out.push_str(s),
                Part::Var(v) => out.push_str(value(v).unwrap_or("")),
            }
        }
    }

    pub fn render<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> String {
        let mut s = String::new();
        self.render_into(&mut s, value);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_in_one_pass() {
        let t = Template::parse("Ran `{command}` {x} {not a var} {}\n");
        let out = t.render(|v| (v == "command").then_some("echo {command}"));
        assert_eq!(out, "Ran `echo {command}`  {not a var} {}\n");
        assert_eq!(t.vars().collect::<Vec<_>>(), vec!["command", "x"]);
    }
}
