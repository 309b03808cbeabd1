//! A linear pre-scan of YAML (and so JSON) text that enforces the text
//! limits of [`crate::api::limits`] before the parser runs: document size,
//! nesting depth and aliases per document.
//!
//! The parser underneath serde_yaml_ng (libyaml) takes time quadratic in
//! the nesting of flow collections (`[[[[...]]]]`: every token looks at
//! every open level), so deep input must be refused before it gets there.
//! The scan follows libyaml's scanner where it matters for that: what
//! opens and closes a flow collection, what is inside a quoted, plain or
//! block scalar or a comment (where brackets mean nothing), and the block
//! indentation that decides where a plain or block scalar ends. Where it
//! is unsure it counts rather than skips, so it may see more nesting than
//! the parser would, never less. Block nesting (indentation, `- - -`)
//! counts too.

use super::limits::{LimitError, MAX_ALIASES, MAX_DEPTH, MAX_DOCUMENT_BYTES};

/// Scans `text` and returns, on the first broken limit, the 1-based
/// number of the document (as the manifest decoder counts them) and the
/// limit.
pub fn scan(text: &str) -> Result<(), (usize, LimitError)> {
    let mut scanner = Scanner {
        b: text.as_bytes(),
        i: 0,
        col: 0,
        line: 1,
        flow: 0,
        indent: -1,
        indents: Vec::new(),
        key: None,
        document: 1,
        used: false,
        doc_start: 0,
        aliases: 0,
    };
    scanner.run().map_err(|limit| (scanner.document, limit))
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// Column in characters, as libyaml counts it.
    col: usize,
    line: usize,
    /// Open flow collections.
    flow: usize,
    /// libyaml's block indentation and the enclosing ones.
    indent: isize,
    indents: Vec<isize>,
    /// Where the token that may turn out to be a simple key started.
    key: Option<(usize, usize)>,
    document: usize,
    /// Whether the current document has begun (`---` or content).
    used: bool,
    doc_start: usize,
    aliases: usize,
}

impl Scanner<'_> {
    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    fn eof(&self) -> bool {
        self.i >= self.b.len()
    }

    /// The length of the line break at `i + k`, if there is one (libyaml's
    /// breaks: CR, LF, CRLF, NEL, LS and PS).
    fn break_at(&self, k: usize) -> Option<usize> {
        match (self.at(k), self.at(k + 1), self.at(k + 2)) {
            (b'\r', b'\n', _) => Some(2),
            (b'\r' | b'\n', _, _) => Some(1),
            (0xC2, 0x85, _) => Some(2),
            (0xE2, 0x80, 0xA8 | 0xA9) => Some(3),
            _ => None,
        }
    }

    fn blank_at(&self, k: usize) -> bool {
        matches!(self.at(k), b' ' | b'\t')
    }

    /// Blank, break or end of text (libyaml's `IS_BLANKZ`; NUL counts as
    /// the end, as there).
    fn blankz_at(&self, k: usize) -> bool {
        self.blank_at(k) || self.at(k) == 0 || self.break_at(k).is_some()
    }

    fn breakz(&self) -> bool {
        self.eof() || self.break_at(0).is_some()
    }

    fn advance(&mut self) {
        if let Some(&byte) = self.b.get(self.i) {
            self.i += 1;
            // UTF-8 continuation bytes do not start a character.
            if !(0x80..0xC0).contains(&byte) {
                self.col += 1;
            }
        }
    }

    /// Consumes the line break at `i` (there is one).
    fn newline(&mut self) {
        self.i += self.break_at(0).unwrap_or(1);
        self.col = 0;
        self.line += 1;
    }

    fn document_indicator(&self) -> bool {
        self.col == 0
            && ((self.at(0) == b'-' && self.at(1) == b'-' && self.at(2) == b'-')
                || (self.at(0) == b'.' && self.at(1) == b'.' && self.at(2) == b'.'))
            && self.blankz_at(3)
    }

    fn check_depth(&self) -> Result<(), LimitError> {
        if self.flow + self.indents.len() > MAX_DEPTH {
            return Err(LimitError::TooDeep {
                line: self.line,
                limit: MAX_DEPTH,
            });
        }
        Ok(())
    }

    fn roll(&mut self, column: usize) -> Result<(), LimitError> {
        let column = column as isize;
        if self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
        }
        self.check_depth()
    }

    fn unroll(&mut self, column: isize) {
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    /// A token that may be a simple key starts here (block context only).
    fn key_start(&mut self) {
        // A possible key from an earlier line is stale (libyaml's
        // `yaml_parser_stale_simple_keys`): a plain scalar that ended by
        // consuming the line break left it behind.
        if self.flow == 0 && self.key.is_none_or(|(line, _)| line != self.line) {
            self.key = Some((self.line, self.col));
        }
    }

    fn close_document(&mut self) -> Result<(), LimitError> {
        if self.i - self.doc_start > MAX_DOCUMENT_BYTES {
            return Err(LimitError::DocumentTooLarge {
                limit: MAX_DOCUMENT_BYTES,
            });
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), LimitError> {
        loop {
            self.skip_to_token();
            // libyaml's reader refuses a NUL ("control characters are not
            // allowed"), so nothing after one is ever decoded; the scanner,
            // which reads NUL as the end of text like libyaml's macros,
            // stops there too (it used to loop on it forever).
            if self.eof() || self.at(0) == 0 {
                break;
            }
            if self.i - self.doc_start > MAX_DOCUMENT_BYTES {
                return self.close_document();
            }
            if self.flow == 0 {
                self.unroll(self.col as isize);
            }
            if self.col == 0 && self.at(0) == b'%' {
                while !self.breakz() {
                    self.advance();
                }
                continue;
            }
            if self.document_indicator() {
                let start = self.at(0) == b'-';
                if self.used {
                    self.close_document()?;
                    self.document += 1;
                    self.aliases = 0;
                }
                self.used = start;
                self.doc_start = self.i;
                self.flow = 0;
                self.unroll(-1);
                self.key = None;
                for _ in 0..3 {
                    self.advance();
                }
                continue;
            }
            self.used = true;
            let before = self.i;
            self.token()?;
            if self.i == before {
                // Every token consumes at least one byte, so the scan stays
                // linear whatever the text; a byte no rule takes is skipped.
                self.advance();
            }
        }
        self.close_document()
    }

    /// Whitespace, comments and line breaks up to the next token.
    fn skip_to_token(&mut self) {
        loop {
            if self.i == 0 && self.b.starts_with(b"\xEF\xBB\xBF") {
                self.i = 3;
            }
            while self.blank_at(0) {
                self.advance();
            }
            if self.at(0) == b'#' {
                while !self.breakz() {
                    self.advance();
                }
            }
            if self.break_at(0).is_some() {
                self.newline();
                if self.flow == 0 {
                    self.key = None;
                }
                continue;
            }
            return;
        }
    }

    fn token(&mut self) -> Result<(), LimitError> {
        let c = self.at(0);
        match c {
            b'[' | b'{' => {
                self.key_start();
                self.flow += 1;
                self.check_depth()?;
                self.advance();
            }
            b']' | b'}' => {
                self.flow = self.flow.saturating_sub(1);
                self.advance();
            }
            b',' => self.advance(),
            b'-' if self.blankz_at(1) => {
                if self.flow == 0 {
                    self.roll(self.col)?;
                    self.key = None;
                }
                self.advance();
            }
            b'?' | b':' if self.flow > 0 || self.blankz_at(1) => {
                if self.flow == 0 {
                    let column = match self.key {
                        Some((line, column)) if c == b':' && line == self.line => column,
                        _ => self.col,
                    };
                    self.roll(column)?;
                    self.key = None;
                }
                self.advance();
            }
            b'*' | b'&' => {
                self.key_start();
                if c == b'*' {
                    self.aliases += 1;
                    if self.aliases > MAX_ALIASES {
                        return Err(LimitError::TooManyAliases {
                            line: self.line,
                            limit: MAX_ALIASES,
                        });
                    }
                }
                self.advance();
                while self.at(0).is_ascii_alphanumeric() || matches!(self.at(0), b'-' | b'_') {
                    self.advance();
                }
            }
            b'!' => {
                self.key_start();
                self.advance();
                while !self.blankz_at(0) && !matches!(self.at(0), b',' | b'[' | b']' | b'{' | b'}') {
                    self.advance();
                }
            }
            b'|' | b'>' if self.flow == 0 => {
                self.key = None;
                self.block_scalar();
            }
            b'\'' => {
                self.key_start();
                self.single_quoted();
            }
            b'"' => {
                self.key_start();
                self.double_quoted();
            }
            _ => {
                self.key_start();
                self.plain();
            }
        }
        Ok(())
    }

    fn single_quoted(&mut self) {
        self.advance();
        while !self.eof() {
            if self.at(0) == b'\'' {
                self.advance();
                if self.at(0) != b'\'' {
                    return;
                }
                self.advance();
            } else if self.break_at(0).is_some() {
                self.newline();
            } else {
                self.advance();
            }
        }
    }

    fn double_quoted(&mut self) {
        self.advance();
        while !self.eof() {
            // Most of a quoted string (all of it, in JSON manifests) is
            // bytes the match below steps over one at a time.
            self.skip_ascii_run(|c| !matches!(c, b'"' | b'\\' | b'\r' | b'\n'));
            match self.at(0) {
                b'"' => {
                    self.advance();
                    return;
                }
                b'\\' => {
                    self.advance();
                    if self.break_at(0).is_some() {
                        self.newline();
                    } else {
                        self.advance();
                    }
                }
                _ if self.break_at(0).is_some() => self.newline(),
                _ => self.advance(),
            }
        }
    }

    /// Skips the bytes ahead that the loop of [`Self::plain`] would only
    /// step over one at a time: ASCII, so one column each, and none of the
    /// bytes it looks at (blanks, breaks, NUL, `:`, `,` and brackets). Most
    /// of a manifest's text is such runs (names, addresses, numbers).
    fn skip_plain_run(&mut self) {
        self.skip_ascii_run(|c| {
            !matches!(
                c,
                b' ' | b'\t' | b'\r' | b'\n' | 0 | b':' | b',' | b'[' | b']' | b'{' | b'}'
            )
        });
    }

    /// Skips the ASCII bytes ahead for which `plain_byte` holds: one column
    /// each.
    fn skip_ascii_run(&mut self, plain_byte: impl Fn(u8) -> bool) {
        let rest = self.b.get(self.i..).unwrap_or_default();
        let run = rest.iter().take_while(|&&c| c.is_ascii() && plain_byte(c)).count();
        self.i += run;
        self.col += run;
    }

    /// A plain scalar, possibly over several lines (libyaml's
    /// `yaml_parser_scan_plain_scalar`).
    fn plain(&mut self) {
        let needed = self.indent + 1;
        loop {
            if self.document_indicator() || self.at(0) == b'#' {
                return;
            }
            loop {
                self.skip_plain_run();
                if self.blankz_at(0) {
                    break;
                }
                let c = self.at(0);
                if self.flow > 0 && c == b':' && matches!(self.at(1), b',' | b'?' | b'[' | b']' | b'{' | b'}') {
                    // libyaml refuses this; nothing after it is parsed.
                    return;
                }
                if (c == b':' && self.blankz_at(1)) || (self.flow > 0 && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    return;
                }
                self.advance();
            }
            if !(self.blank_at(0) || self.break_at(0).is_some()) {
                return;
            }
            while self.blank_at(0) || self.break_at(0).is_some() {
                if self.break_at(0).is_some() {
                    self.newline();
                } else {
                    self.advance();
                }
            }
            if self.flow == 0 && (self.col as isize) < needed {
                return;
            }
        }
    }

    /// A literal or folded block scalar: its header, then every line
    /// indented at least as much as the first (libyaml's
    /// `yaml_parser_scan_block_scalar`).
    fn block_scalar(&mut self) {
        self.advance();
        let mut increment = 0usize;
        for _ in 0..2 {
            match self.at(0) {
                b'+' | b'-' => self.advance(),
                d @ b'1'..=b'9' => {
                    increment = usize::from(d - b'0');
                    self.advance();
                }
                _ => {}
            }
        }
        while self.blank_at(0) {
            self.advance();
        }
        if self.at(0) == b'#' {
            while !self.breakz() {
                self.advance();
            }
        }
        if self.break_at(0).is_none() {
            // End of text, or libyaml refuses the header: nothing follows.
            return;
        }
        self.newline();
        let mut indent = match increment {
            0 => 0,
            n if self.indent >= 0 => self.indent as usize + n,
            n => n,
        };
        // Leading empty lines; without an indicator the deepest of them
        // and the first content line set the indentation.
        let mut max_indent = 0;
        loop {
            while (indent == 0 || self.col < indent) && self.at(0) == b' ' {
                self.advance();
            }
            max_indent = max_indent.max(self.col);
            if self.break_at(0).is_none() {
                break;
            }
            self.newline();
        }
        if indent == 0 {
            indent = max_indent.max((self.indent + 1).max(1) as usize);
        }
        while self.col == indent && !self.eof() {
            while !self.breakz() {
                self.advance();
            }
            if self.eof() {
                return;
            }
            self.newline();
            loop {
                while self.col < indent && self.at(0) == b' ' {
                    self.advance();
                }
                if self.break_at(0).is_none() {
                    break;
                }
                self.newline();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_error(text: &str) -> Option<usize> {
        match scan(text) {
            Err((_, LimitError::TooDeep { line, .. })) => Some(line),
            Err(other) => panic!("unexpected {other:?}"),
            Ok(()) => None,
        }
    }

    /// Found by `cargo fuzz` (fuzz/fuzz_targets/manifests.rs): a NUL byte
    /// inside a plain scalar made the scanner loop forever.
    #[test]
    fn a_nul_byte_ends_the_scan_instead_of_looping() {
        let text =
            "apiVersion: v1\nkind: Pod\nmetadata: {name: stale}\nspec: {containers: [{nam\0e: c, image: nginx}]}\n";
        assert_eq!(scan(text), Ok(()));
        assert_eq!(scan("\0"), Ok(()));
        assert_eq!(scan("a: \0\0\n- [\0]"), Ok(()));
        assert!(crate::api::manifest::parse_documents(text).is_err());
    }

    /// Found by `cargo fuzz` (fuzz/fuzz_targets/manifests.rs): the YAML
    /// serde_yaml_ng writes for a Node whose address holds braces. The key
    /// position of the plain value `x` outlived its line, so `address:`
    /// rolled the indentation to the column of its colon, the block
    /// scalar's lines were taken for flow collections and the text, which
    /// libyaml reads, was refused as too deep.
    #[test]
    fn a_block_scalar_after_a_plain_value_is_not_structure() {
        let text = format!(
            "- type: x\n  address: |-\n    192.168.0: {{a\n    {}\n",
            "{".repeat(120)
        );
        assert_eq!(depth_error(&text), None);
        let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert!(value[0]["address"].as_str().unwrap().ends_with('{'));
    }

    #[test]
    fn deep_flow_nesting_is_refused_in_yaml_and_json() {
        let deep = |n: usize| format!("annotations: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert_eq!(depth_error(&deep(99)), None);
        assert_eq!(depth_error(&deep(100)), Some(1));
        assert_eq!(depth_error(&deep(100_000)), Some(1));
        let json = format!("{{\"a\":{}1{}}}", "{\"b\":".repeat(100_000), "}".repeat(100_000));
        assert_eq!(depth_error(&json), Some(1));
    }

    #[test]
    fn deep_block_nesting_is_refused() {
        let dashes = format!("{}x\n", "- ".repeat(101));
        assert_eq!(depth_error(&dashes), Some(1));
        let mut indented = String::new();
        for level in 0..101 {
            indented.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
        }
        assert_eq!(depth_error(&indented), Some(101));
    }

    #[test]
    fn brackets_in_scalars_and_comments_do_not_count() {
        let opens = "[".repeat(200);
        for text in [
            format!("a: '{opens}'\n"),
            format!("a: \"{opens}\\\"\"\n"),
            format!("a: x{opens}\n"),
            format!("a: x y {opens}\n  continued {opens}\n"),
            format!("a: 1 # {opens}\n"),
            format!("a: |\n  {opens}\n   {opens}\nb: |2-\n   {opens}\n"),
            format!("- a: >\n    {opens}\n  b: c\n"),
            format!("a: [\"{opens}\", '{opens}']\n"),
        ] {
            assert_eq!(scan(&text), Ok(()), "{text}");
        }
    }

    #[test]
    fn structure_after_a_scalar_still_counts() {
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        // A mapping key at the indentation of the block scalar's parent
        // ends the scalar.
        assert!(depth_error(&format!("- a: |\n  b: {deep}\n")).is_some());
        // A line at the mapping's indentation ends a plain scalar.
        assert!(depth_error(&format!("a: x 'y\n{deep}\n")).is_some());
        // A comment ends at any of libyaml's line breaks.
        assert!(depth_error(&format!("# x\u{2028}{deep}\n")).is_some());
        // A quote in the middle of a plain scalar opens nothing.
        assert!(depth_error(&format!("a: it's\nb: {deep}\n")).is_some());
    }

    #[test]
    fn documents_aliases_and_sizes() {
        let aliases = format!("a: &a x\nb: [{}]\n", vec!["*a"; MAX_ALIASES + 1].join(", "));
        assert!(matches!(
            scan(&aliases),
            Err((1, LimitError::TooManyAliases { line: 2, .. }))
        ));
        let text = format!("a: 1\n---\n{aliases}");
        assert!(matches!(scan(&text), Err((2, LimitError::TooManyAliases { .. }))));
        let text = format!("---\na: 1\n---\n---\nb: '{}'\n", "x".repeat(MAX_DOCUMENT_BYTES));
        assert_eq!(
            scan(&text),
            Err((
                3,
                LimitError::DocumentTooLarge {
                    limit: MAX_DOCUMENT_BYTES
                }
            ))
        );
    }
}
