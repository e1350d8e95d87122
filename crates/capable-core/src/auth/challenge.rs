//! `WWW-Authenticate` (RFC 9110 §11.6.1): one or more challenges, each a scheme and
//! either a token68 or a list of auth-params whose values are tokens or quoted strings.
//!
//! A quoted value may contain commas and escaped quotes, so a challenge list cannot be
//! split on commas: this is a small tokenizer. A comma followed by `name=` continues
//! the current challenge; a comma followed by a bare token starts the next one.
//!
//! ```
//! use capable_core::internal::auth::challenge::parse;
//! let c = parse(r#"Bearer error="invalid_token", error_description="Missing header, or expired", resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp", scope="a b""#);
//! assert_eq!(c.len(), 1);
//! assert_eq!(c[0].param("error_description"), Some("Missing header, or expired"));
//! assert_eq!(c[0].scopes(), ["a", "b"]);
//! ```

/// One challenge: a scheme (`Bearer`, `DPoP`, …) and its parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as sent.
    pub scheme: String,
    /// The auth-params in order, names in lower case, values unquoted.
    pub params: Vec<(String, String)>,
    /// A token68, for schemes that carry one instead of params.
    pub token68: Option<String>,
}

impl Challenge {
    /// The value of parameter `name` (names are case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the scheme is `scheme` (case-insensitive).
    pub fn is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// A challenge OAuth can answer: `Bearer` or `DPoP`.
    pub fn is_oauth(&self) -> bool {
        self.is("bearer") || self.is("dpop")
    }

    /// `resource_metadata` (RFC 9728 §5.1).
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata").filter(|v| !v.is_empty())
    }

    /// `error` (RFC 6750 §3.1).
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }

    /// The scopes of `scope`, split on spaces.
    pub fn scopes(&self) -> Vec<String> {
        self.param("scope")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// The OAuth challenges among all `WWW-Authenticate` header values, `Bearer` and
/// `DPoP` only, in order.
pub fn oauth_challenges(headers: &[String]) -> Vec<Challenge> {
    headers
        .iter()
        .flat_map(|h| parse(h))
        .filter(Challenge::is_oauth)
        .collect()
}

/// Parses one `WWW-Authenticate` header value. Malformed parts are skipped, never
/// fatal: a server's odd header must not hide the parameters that are well formed.
pub fn parse(header: &str) -> Vec<Challenge> {
    let mut lexer = Lexer {
        s: header.as_bytes(),
        i: 0,
    };
    let mut out: Vec<Challenge> = Vec::new();
    loop {
        lexer.skip_separators();
        let Some(scheme) = lexer.token() else {
            if lexer.at_end() {
                break;
            }
            // Not a token: skip one byte and look again.
            lexer.i += 1;
            continue;
        };
        let mut challenge = Challenge {
            scheme: scheme.to_owned(),
            ..Challenge::default()
        };
        lexer.skip_spaces();
        // token68, or the first auth-param.
        let start = lexer.i;
        if let Some(t68) = lexer.token68() {
            let after = lexer.i;
            lexer.skip_spaces();
            if lexer.peek() == Some(b'=') && !t68.ends_with('=') {
                // It was a param name, not a token68.
                lexer.i = start;
            } else if matches!(lexer.peek(), None | Some(b',')) {
                challenge.token68 = Some(t68.to_owned());
                lexer.i = after;
                out.push(challenge);
                continue;
            } else {
                lexer.i = start;
            }
        }
        // auth-params until a token not followed by `=` (the next challenge). The list
        // may start with empty elements (`Bearer , realm=x`), like any list.
        loop {
            let before = lexer.i;
            lexer.skip_separators();
            let Some(name) = lexer.token() else {
                lexer.i = before;
                break;
            };
            lexer.skip_spaces();
            if lexer.peek() != Some(b'=') {
                // The next challenge's scheme.
                lexer.i = before;
                break;
            }
            lexer.i += 1;
            lexer.skip_spaces();
            let value = if lexer.peek() == Some(b'"') {
                lexer.quoted()
            } else {
                lexer.token().map(str::to_owned).unwrap_or_default()
            };
            challenge.params.push((name.to_ascii_lowercase(), value));
            lexer.skip_spaces();
            match lexer.peek() {
                // Another param, or the next challenge: the loop looks past the commas.
                Some(b',') => {}
                _ => break,
            }
        }
        out.push(challenge);
    }
    out
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl<'a> Lexer<'a> {
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<&'a str> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| std::str::from_utf8(&self.s[start..self.i]).unwrap_or(""))
    }

    /// token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    fn token68(&mut self) -> Option<&'a str> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
        {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        while self.peek() == Some(b'=') {
            self.i += 1;
        }
        Some(std::str::from_utf8(&self.s[start..self.i]).unwrap_or(""))
    }

    /// A quoted-string (the opening quote is at the cursor), unescaped.
    fn quoted(&mut self) -> String {
        self.i += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        out.push(next);
                        self.i += 1;
                    }
                }
                other => out.push(other),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typescript_sdk_challenge_with_commas_in_a_quoted_value() {
        let h = r#"Bearer error="invalid_token", error_description="Missing Authorization header", scope="mcp:basic mcp:write", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#;
        let c = parse(h);
        assert_eq!(c.len(), 1);
        assert!(c[0].is("bearer"));
        assert_eq!(c[0].error(), Some("invalid_token"));
        assert_eq!(c[0].scopes(), ["mcp:basic", "mcp:write"]);
        assert_eq!(
            c[0].resource_metadata(),
            Some("http://localhost:3000/.well-known/oauth-protected-resource/mcp")
        );
        let commas = parse(r#"Bearer error_description="a, b, c=d", realm=x"#);
        assert_eq!(commas[0].param("error_description"), Some("a, b, c=d"));
        assert_eq!(commas[0].param("REALM"), Some("x"));
    }

    #[test]
    fn several_challenges_in_one_header_and_escapes() {
        let c =
            parse(r#"Basic realm="a \"b\"", DPoP algs="ES256", error="use_dpop_nonce", Bearer"#);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].param("realm"), Some(r#"a "b""#));
        assert!(c[1].is("DPoP"));
        assert_eq!(c[1].error(), Some("use_dpop_nonce"));
        assert!(c[2].is("bearer") && c[2].params.is_empty());
        let only = oauth_challenges(&["Basic realm=x".into(), "Bearer scope=\"s\"".into()]);
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].scopes(), ["s"]);
    }

    #[test]
    fn token68_and_garbage() {
        let c = parse("Negotiate abc+/def==, Bearer realm=r");
        assert_eq!(c[0].token68.as_deref(), Some("abc+/def=="));
        assert_eq!(c[1].param("realm"), Some("r"));
        assert!(parse("").is_empty());
        let odd = parse(r#"Bearer scope="unterminated"#);
        assert_eq!(odd[0].param("scope"), Some("unterminated"));
        assert_eq!(parse(",,, Bearer ,").len(), 1);
    }

    #[test]
    fn a_parameter_list_may_start_with_empty_elements() {
        let c = parse(r#"Bearer , , realm="r", scope=s, DPoP"#);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].param("realm"), Some("r"));
        assert_eq!(c[0].scopes(), ["s"]);
        assert!(c[1].is("dpop") && c[1].params.is_empty());
        let next = parse("Basic , Bearer realm=r");
        assert_eq!(next.len(), 2, "{next:?}");
        assert!(next[0].params.is_empty());
        assert_eq!(next[1].param("realm"), Some("r"));
    }
}
