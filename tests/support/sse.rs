//! A small Server-Sent Events client for the tests: reads a response as the WHATWG
//! parsing rules say (events end at a blank line; `:` starts a comment; several `data:`
//! lines join with newlines). Included with `#[path = "../support/sse.rs"] mod sse;`.
#![allow(dead_code)]

use serde_json::Value;

/// One thing read from a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Event {
        name: String,
        id: Option<String>,
        data: String,
    },
    Comment(String),
}

impl Item {
    pub fn name(&self) -> &str {
        match self {
            Item::Event { name, .. } => name,
            Item::Comment(_) => ":",
        }
    }

    /// The event's data as JSON (panics on a comment or bad JSON).
    pub fn json(&self) -> Value {
        match self {
            Item::Event { data, .. } => serde_json::from_str(data).expect("event data is JSON"),
            Item::Comment(c) => panic!("a comment, not an event: {c}"),
        }
    }
}

/// Reads a response's events as they arrive.
pub struct Reader {
    res: reqwest::Response,
    buf: String,
    pending: std::collections::VecDeque<Item>,
}

impl Reader {
    pub fn new(res: reqwest::Response) -> Self {
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        assert!(ct.starts_with("text/event-stream"), "content-type {ct}");
        Reader {
            res,
            buf: String::new(),
            pending: Default::default(),
        }
    }

    /// The next event or comment; `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            let chunk = self.res.chunk().await.expect("the stream reads")?;
            self.buf
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
            while let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                self.pending.extend(parse_block(&block));
            }
        }
    }

    /// Everything until the stream ends.
    pub async fn all(mut self) -> Vec<Item> {
        let mut items = Vec::new();
        while let Some(item) = self.next().await {
            items.push(item);
        }
        items
    }
}

fn parse_block(block: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let (mut name, mut id, mut data) = (None, None, Vec::new());
    for line in block.lines() {
        if let Some(c) = line.strip_prefix(':') {
            items.push(Item::Comment(c.trim_start().to_string()));
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = Some(value.to_string()),
            "id" => id = Some(value.to_string()),
            "data" => data.push(value.to_string()),
            _ => {}
        }
    }
    if name.is_some() || !data.is_empty() {
        items.push(Item::Event {
            name: name.unwrap_or_else(|| "message".into()),
            id,
            data: data.join("\n"),
        });
    }
    items
}

/// The event names in order, without comments.
pub fn names(items: &[Item]) -> Vec<&str> {
    items
        .iter()
        .filter(|i| matches!(i, Item::Event { .. }))
        .map(Item::name)
        .collect()
}
