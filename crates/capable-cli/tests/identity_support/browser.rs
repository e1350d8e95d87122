//! A person's browser for the tests of the callers' own logins (`bridge_user_login.rs`,
//! `bridge_user_elicit.rs`): it opens the URL the gateway sent, fills in the login form
//! of the server's own authorization server, and follows the redirects back to the
//! gateway's callback, with the cookies each site set.

use std::collections::BTreeMap;

use super::super::listen_support::{http_at, Http};

/// A person's browser: its cookies per site (port), the redirects followed.
#[derive(Default)]
pub struct Browser {
    cookies: BTreeMap<u16, BTreeMap<String, String>>,
    /// Every address it went to, in order.
    pub visited: Vec<String>,
}

/// `http://127.0.0.1:PORT/path?query` as (port, path and query).
fn split_url(url: &str) -> (u16, String) {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("not a loopback URL: {url}"));
    let (port, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    (port.parse().unwrap(), path.to_owned())
}

impl Browser {
    /// `METHOD url` (a form `body` for a POST), following redirects with the cookies
    /// each site set: the last answer, and the address it came from.
    pub fn go(&mut self, method: &str, url: &str, body: &str) -> (Http, String) {
        let (mut method, mut url, mut body) = (method.to_owned(), url.to_owned(), body.to_owned());
        for _ in 0..20 {
            self.visited.push(url.clone());
            let (port, path) = split_url(&url);
            let jar = self.cookies.entry(port).or_default();
            let cookie = jar
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            let mut headers = vec![("Cookie", cookie.as_str())];
            if method == "POST" {
                headers.push(("Content-Type", "application/x-www-form-urlencoded"));
            }
            let answer = http_at(port, &method, &path, &headers, &body);
            for (name, value) in &answer.headers {
                if !name.eq_ignore_ascii_case("set-cookie") {
                    continue;
                }
                let pair = value.split(';').next().unwrap_or("");
                if let Some((n, v)) = pair.split_once('=') {
                    let gone = v.is_empty()
                        || value
                            .to_ascii_lowercase()
                            .contains("expires=thu, 01 jan 1970");
                    match gone {
                        true => jar.remove(n.trim()),
                        false => jar.insert(n.trim().to_owned(), v.to_owned()),
                    };
                }
            }
            let Some(location) = answer
                .header("location")
                .filter(|_| (300..400).contains(&answer.status))
            else {
                return (answer, url);
            };
            url = match location.starts_with("http") {
                true => location.to_owned(),
                false => format!("http://127.0.0.1:{port}{location}"),
            };
            (method, body) = ("GET".into(), String::new());
        }
        panic!("too many redirects: {:?}", self.visited);
    }

    /// Logs in as `account` at the login URL the gateway sent: the gateway's answer
    /// at the end, and the callback's address.
    pub fn log_in(&mut self, url: &str, account: &str) -> (Http, String) {
        let (form, at) = self.go("GET", url, "");
        assert_eq!(form.status, 200, "{}", form.body);
        assert!(
            form.body.contains("name=\"login\""),
            "no login form: {}",
            form.body
        );
        let (done, _) = self.go("POST", &at, &format!("login={account}"));
        let callback = self
            .visited
            .iter()
            .find(|u| u.contains("/oauth/callback?"))
            .cloned()
            .unwrap_or_else(|| panic!("never back at the gateway: {:?}", self.visited));
        (done, callback)
    }
}
