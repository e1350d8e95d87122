//! `WWW-Authenticate` (RFC 9110 §11.6.1), read by `auth::challenge` and classified by
//! `auth::need`. Three checks:
//!
//! - **Round trip.** Challenges generated from the bytes (any scheme, a token68 or
//!   auth-params whose values are tokens or quoted strings with any escapes, any
//!   optional white space, empty list elements and spaces around `=`) are written in
//!   the RFC's syntax; parsing the text gives back exactly those challenges (names of
//!   parameters in lower case, values unquoted).
//! - **Any text.** Parsing any string never panics and yields only well-formed
//!   challenges (a token for a scheme, lower-case tokens for names, a token68 of the
//!   token68 alphabet); writing them back and parsing again gives the same challenges.
//! - **Classification.** `oauth_challenges` keeps exactly the `Bearer` and `DPoP`
//!   challenges of every header, in order, and `need::classify` gives the need the
//!   table of the specification gives for the status, the first `error` and the nonce.

#![no_main]

use arbitrary::Arbitrary;
use capable_core::internal::auth::challenge::{oauth_challenges, parse, Challenge};
use capable_core::internal::auth::need::{classify, NeedKind};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum ValueIn {
    Token(String),
    Quoted { value: String, escape_all: bool },
}

#[derive(Arbitrary, Debug)]
struct ParamIn {
    name: String,
    value: ValueIn,
    /// Spaces around `=` (bits 0–1 before, 2–3 after).
    bws: u8,
    /// What precedes the next parameter: bits 0–1 spaces before the comma, 2–3 after
    /// it, 4–5 extra (empty) list elements.
    sep: u8,
}

#[derive(Arbitrary, Debug)]
enum BodyIn {
    Nothing,
    Token68 {
        token: String,
        padding: u8,
    },
    Params {
        leading_commas: u8,
        params: Vec<ParamIn>,
    },
}

#[derive(Arbitrary, Debug)]
struct ChallengeIn {
    scheme: String,
    /// Spaces between the scheme and what follows it (at least one).
    spaces: u8,
    body: BodyIn,
    /// What precedes the next challenge, as `ParamIn::sep`.
    sep: u8,
}

#[derive(Arbitrary, Debug)]
struct Input {
    challenges: Vec<ChallengeIn>,
    raw: String,
    more: Vec<String>,
    status: u16,
    nonce: Option<String>,
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn is_token68_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/".contains(c)
}

fn token(s: &str) -> String {
    let t: String = s.chars().filter(|c| is_tchar(*c)).collect();
    if t.is_empty() {
        "x".into()
    } else {
        t
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_tchar)
}

fn spaces(n: u8) -> &'static str {
    ["", " ", "\t", "  \t"][usize::from(n & 3)]
}

/// OWS "," OWS, with empty list elements.
fn separator(sep: u8, out: &mut String) {
    out.push_str(spaces(sep));
    out.push(',');
    for _ in 0..(sep >> 4) & 3 {
        out.push_str(" ,");
    }
    out.push_str(spaces(sep >> 2));
}

/// A quoted-string holding `value`: `"` and `\` escaped, every character escaped
/// when `all`.
fn quote(value: &str, all: bool, out: &mut String) {
    out.push('"');
    for c in value.chars() {
        if all || c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The challenges `input` describes, and their text.
fn generate(input: &[ChallengeIn]) -> (Vec<Challenge>, String) {
    let mut text = String::new();
    let mut expected = Vec::new();
    for (i, c) in input.iter().take(16).enumerate() {
        if i > 0 {
            separator(c.sep, &mut text);
        }
        let mut challenge = Challenge {
            scheme: token(&c.scheme),
            ..Challenge::default()
        };
        text.push_str(&challenge.scheme);
        match &c.body {
            BodyIn::Nothing => {}
            BodyIn::Token68 { token, padding } => {
                let mut t: String = token.chars().filter(|c| is_token68_char(*c)).collect();
                if t.is_empty() {
                    t.push('a');
                }
                t.extend(std::iter::repeat_n('=', usize::from(padding % 3)));
                text.push_str(&" ".repeat(1 + usize::from(c.spaces % 3)));
                text.push_str(&t);
                challenge.token68 = Some(t);
            }
            BodyIn::Params {
                leading_commas,
                params,
            } => {
                text.push_str(&" ".repeat(1 + usize::from(c.spaces % 3)));
                // `#auth-param` may start with empty elements.
                for _ in 0..leading_commas % 3 {
                    text.push_str(", ");
                }
                for (j, p) in params.iter().take(16).enumerate() {
                    if j > 0 {
                        separator(p.sep, &mut text);
                    }
                    let name = token(&p.name);
                    text.push_str(&name);
                    text.push_str(spaces(p.bws));
                    text.push('=');
                    text.push_str(spaces(p.bws >> 2));
                    // qdtext and quoted-pair: no control character but HTAB.
                    let text_of = |v: &str| -> String {
                        v.chars()
                            .filter(|c| *c == '\t' || !c.is_control())
                            .collect()
                    };
                    let value = match &p.value {
                        ValueIn::Token(t) if is_token(t) => {
                            text.push_str(t);
                            t.clone()
                        }
                        ValueIn::Token(t) => {
                            let v = text_of(t);
                            quote(&v, false, &mut text);
                            v
                        }
                        ValueIn::Quoted { value, escape_all } => {
                            let v = text_of(value);
                            quote(&v, *escape_all, &mut text);
                            v
                        }
                    };
                    challenge.params.push((name.to_ascii_lowercase(), value));
                }
            }
        }
        expected.push(challenge);
    }
    (expected, text)
}

/// `challenges` written back as one header value (every value quoted).
fn write(challenges: &[Challenge]) -> String {
    let mut out = String::new();
    for (i, c) in challenges.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&c.scheme);
        if let Some(t) = &c.token68 {
            out.push(' ');
            out.push_str(t);
        }
        for (j, (name, value)) in c.params.iter().enumerate() {
            out.push_str(if j == 0 { " " } else { ", " });
            out.push_str(name);
            out.push('=');
            quote(value, false, &mut out);
        }
    }
    out
}

fn well_formed(c: &Challenge) {
    assert!(is_token(&c.scheme), "{c:?}");
    for (name, _) in &c.params {
        assert!(
            is_token(name) && *name == name.to_ascii_lowercase(),
            "{c:?}"
        );
    }
    if let Some(t) = &c.token68 {
        let body = t.trim_end_matches('=');
        assert!(
            !body.is_empty() && body.chars().all(is_token68_char),
            "{c:?}"
        );
        assert!(c.params.is_empty(), "{c:?}");
    }
}

fuzz_target!(|input: Input| {
    // Round trip.
    let (expected, text) = generate(&input.challenges);
    let got = parse(&text);
    assert_eq!(got, expected, "{text:?}");

    // Any text: well formed, and stable once written back.
    let raw = parse(&input.raw);
    raw.iter().for_each(well_formed);
    let again = write(&raw);
    assert_eq!(
        parse(&again),
        raw,
        "{:?} written back as {again:?}",
        input.raw
    );

    // Classification.
    let mut headers = vec![text, input.raw.clone()];
    headers.extend(input.more.iter().take(4).cloned());
    let oauth = oauth_challenges(&headers);
    let reference: Vec<Challenge> = headers
        .iter()
        .flat_map(|h| parse(h))
        .filter(|c| {
            c.scheme.eq_ignore_ascii_case("bearer") || c.scheme.eq_ignore_ascii_case("dpop")
        })
        .collect();
    assert_eq!(oauth, reference);
    for c in &oauth {
        if let Some(m) = c.resource_metadata() {
            assert!(!m.is_empty());
        }
        assert!(c
            .scopes()
            .iter()
            .all(|s| !s.is_empty() && !s.contains(char::is_whitespace)));
    }
    let status = match input.status % 4 {
        0 => input.status,
        1 => 401,
        2 => 403,
        _ => 400,
    };
    let error = oauth.iter().find_map(|c| {
        c.params
            .iter()
            .find(|(n, _)| n == "error")
            .map(|(_, v)| v.as_str())
    });
    let kind = match (status, error) {
        (400 | 401, Some("use_dpop_nonce")) if input.nonce.is_some() => Some(NeedKind::DpopNonce),
        (401, _) => Some(NeedKind::Unauthorized),
        (403, Some("insufficient_scope")) => Some(NeedKind::InsufficientScope),
        _ => None,
    };
    let need = classify(
        status,
        &headers,
        input.nonce.as_deref(),
        "http://mcp.test/mcp",
    );
    assert_eq!(need.as_ref().map(|n| n.kind), kind);
    if let Some(need) = need {
        assert_eq!(need.status, status);
        assert_eq!(need.challenges, oauth);
        assert_eq!(need.dpop_nonce, input.nonce);
        let scopes = need.scopes();
        for (i, s) in scopes.iter().enumerate() {
            assert!(!scopes[..i].contains(s), "{s} twice in {scopes:?}");
        }
        assert!(oauth
            .iter()
            .flat_map(Challenge::scopes)
            .all(|s| scopes.contains(&s)));
    }
});
