//! The logins of `user.rs`: their binding to a browser, once only; each caller's store.

use super::*;

use crate::credentials::test_caller as caller;

fn login(
    users: &Users,
    who: &str,
) -> (
    Elicitation,
    oneshot::Receiver<(String, oneshot::Sender<Outcome>)>,
) {
    let (tx, rx) = oneshot::channel();
    let authorize = "https://as.example/authorize?client_id=c&state=S-".to_owned() + who;
    let e = users
        .register(&caller(who).key(), "https://up.example/mcp", &authorize, tx)
        .unwrap();
    (e, rx)
}

#[test]
fn a_login_goes_through_only_from_the_browser_that_opened_it_and_only_once() {
    let users = Users::new();
    users.set_base("http://127.0.0.1:9/mcp");
    let (alice, mut flow) = login(&users, "alice");
    assert!(alice
        .url
        .starts_with("http://127.0.0.1:9/oauth/start?login="));
    let query = "code=c1&state=S-alice";
    // Before its start is opened, no browser has it.
    assert!(users.callback(query, None).is_err());
    let (to, name, nonce) = users.start(&alice.id).unwrap();
    assert!(to.starts_with("https://as.example/authorize"));
    assert!(users.start(&alice.id).is_err(), "a start opens once");
    // Another browser (no cookie, or another's) is refused, and the login stays.
    assert!(users.callback(query, None).is_err());
    let forged = format!("{name}=00");
    assert!(users.callback(query, Some(&forged)).is_err());
    assert!(flow.try_recv().is_err(), "nothing reached the flow");
    let cookies = format!("other=1; {name}={nonce}");
    assert!(users.callback(query, Some(&cookies)).is_ok());
    let (got, _) = flow.try_recv().unwrap();
    assert_eq!(got, query);
    assert!(users.callback(query, Some(&cookies)).is_err(), "single-use");
    assert!(users.callback("code=x", Some(&cookies)).is_err());
}

#[test]
fn each_caller_has_a_store_of_its_own_and_a_login_is_taken_as_fresh_once() {
    let users = Users::new();
    let url: Url = "https://up.example/mcp".parse().unwrap();
    let alice = users.store_of(&caller("alice"));
    let bob = users.store_of(&caller("bob"));
    assert!(!Arc::ptr_eq(&alice, &bob));
    assert!(Arc::ptr_eq(&alice, &users.store_of(&caller("alice"))));
    assert!(!users.take_fresh(&caller("alice"), &url));
    users.finished(&caller("alice").key(), url.as_str(), true);
    assert!(users.take_fresh(&caller("alice"), &url));
    assert!(!users.take_fresh(&caller("alice"), &url), "once");
    assert!(!users.take_fresh(&caller("bob"), &url));
    assert_eq!(users.len(), 2);
}
