//! Reading the loosely shaped OpenAI-format message objects (work in progress).
