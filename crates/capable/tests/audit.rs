//! `capable::audit` through its public API, against real fixture servers (and one
//! scripted modern server that never acknowledges a listen stream): the typed report a
//! host acts on, its evidence compared with what was actually on the wire, and its
//! JSON form.

mod common;

use std::time::Duration;

use capable::audit::{self, AuditOptions, AuditReport, Check, FindingKind, Outcome, Recorder};
use capable::{connect, connect_stdio, Era, Error, Method, ServerCommand, Session};
use common::{fixture, within, Scripted, Wire, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);

/// Options with the audit's recorder chained after the test's wire tap (so the wire
/// also checks that an existing tap keeps seeing every message).
fn recorded(wire: &Wire) -> (capable::ClientOptions, Recorder) {
    let recorder = Recorder::new();
    let mut options = wire.options();
    options.tap = Some(recorder.tap(options.tap.take()));
    (options, recorder)
}

/// Connects to `server` with a recorder and audits it; the session stays open.
async fn audit_of(server: &ServerCommand) -> (Session, AuditReport, Wire) {
    let wire = Wire::default();
    let (options, recorder) = recorded(&wire);
    let session = connect_stdio(server, options).await.expect("connect");
    let report = audit::run(&session, &recorder, &AuditOptions::default()).await;
    (session, report, wire)
}

/// The check named `check` of `capability`; fails the test, showing every check, when
/// there is none.
#[track_caller]
fn check<'r>(report: &'r AuditReport, capability: &str, check: &str) -> &'r Check {
    report
        .check(capability, check)
        .unwrap_or_else(|| panic!("no check {capability}/{check} in {:#?}", report.checks))
}

fn outcomes(report: &AuditReport) -> Vec<(&str, &str, Outcome)> {
    report
        .checks
        .iter()
        .map(|c| (c.capability.as_str(), c.check.as_str(), c.outcome))
        .collect()
}

#[tokio::test]
async fn a_server_that_keeps_its_contract_is_clean() {
    within(LIMIT, async {
        let (session, report, wire) = audit_of(&fixture("read-only")).await;
        session.close().await;

        assert!(report.is_clean(), "{:#?}", report.findings);
        assert!(report.notices.is_empty(), "{:?}", report.notices);
        assert_eq!(report.server.name, "capable-fixture/read-only");
        assert_eq!(report.era, Era::Legacy);
        assert_eq!(
            outcomes(&report),
            [
                ("(lifecycle)", "handshake", Outcome::Ok),
                ("(lifecycle)", "ping", Outcome::Ok),
                ("resources", "list", Outcome::Ok),
                ("resources", "templates/list", Outcome::Ok),
                ("resources", "read the first listed resource", Outcome::Ok),
            ]
        );
        assert_eq!(report.count(Outcome::Ok), 5);
        assert_eq!(report.count(Outcome::Violation), 0);
        assert_eq!(
            check(&report, "resources", "read the first listed resource").detail,
            format!("{MANUAL}: 1 content item")
        );
        // `resources: {}` declares no subscription: none was attempted.
        let sent = wire.sent_methods();
        assert!(
            !sent.iter().any(|m| m.starts_with("resources/subscribe")),
            "{sent:?}"
        );
        // The probes themselves are valid messages of the negotiated version.
        wire.assert_schema_valid(report.protocol_version);
    })
    .await
}

#[tokio::test]
async fn a_declared_subscribe_answered_with_method_not_found_is_one_finding_with_the_exact_messages(
) {
    within(LIMIT, async {
        let (session, report, wire) = audit_of(&fixture("lying-subscribe")).await;

        assert!(!report.is_clean());
        assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
        let finding = &report.findings[0];
        assert_eq!(finding.kind, FindingKind::MethodNotFound);
        assert_eq!(finding.capability, "resources.subscribe");
        assert_eq!(finding.method, "resources/subscribe");
        assert_eq!(finding.server.name, "capable-fixture/lying-subscribe");
        assert_eq!(finding.protocol_version, session.protocol_version());

        // The evidence is exactly what went over the wire, both ways.
        let requests = wire.sent_requests("resources/subscribe");
        assert_eq!(requests.len(), 1, "{}", common::show(&requests));
        assert_eq!(finding.request, requests[0]);
        let answers: Vec<Value> = wire
            .received()
            .into_iter()
            .filter(|m| m.get("method").is_none() && m["id"] == requests[0]["id"])
            .collect();
        assert_eq!(answers.len(), 1, "{}", common::show(&answers));
        assert_eq!(finding.response, answers[0]);
        assert_eq!(finding.response["error"]["code"], -32601);

        // The check is the violation; the method is then broken for the session: the
        // unsubscribe is skipped, never sent, and a host's next subscribe is refused
        // locally.
        assert_eq!(
            check(&report, "resources.subscribe", "subscribe").outcome,
            Outcome::Violation
        );
        assert_eq!(
            check(&report, "resources.subscribe", "unsubscribe").outcome,
            Outcome::Skipped
        );
        assert!(wire.sent_requests("resources/unsubscribe").is_empty());
        assert!(matches!(
            session.check(Method::Subscribe),
            Err(Error::Refused(_))
        ));
        // Reading never depended on the subscription.
        assert_eq!(
            check(&report, "resources", "read the first listed resource").outcome,
            Outcome::Ok
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn the_report_serializes_as_the_audit_json_document() {
    within(LIMIT, async {
        let (session, report, _) = audit_of(&fixture("lying-subscribe")).await;
        session.close().await;

        let json = serde_json::to_value(&report).expect("serializes");
        let keys = |v: &Value| -> Vec<String> {
            v.as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(
            keys(&json),
            [
                "server",
                "era",
                "protocolVersion",
                "capabilities",
                "checks",
                "violations",
                "notices"
            ]
        );
        assert_eq!(
            json["server"],
            json!({"name": "capable-fixture/lying-subscribe", "version": "0.1.0"})
        );
        assert_eq!(json["era"], "legacy");
        assert_eq!(json["protocolVersion"], "2025-11-25");
        assert_eq!(
            json["capabilities"],
            json!({"resources": {"subscribe": true}})
        );
        assert_eq!(
            json["checks"][0],
            json!({"capability": "(lifecycle)", "check": "handshake", "method": "initialize",
                   "outcome": "ok", "detail": "2025-11-25 negotiated; result valid"})
        );
        let violation = &json["violations"][0];
        assert_eq!(
            keys(violation),
            [
                "capability",
                "method",
                "kind",
                "detail",
                "request",
                "response",
                "server",
                "protocolVersion",
                "at"
            ]
        );
        assert_eq!(violation["kind"], "method-not-found");
        let at = violation["at"].as_str().unwrap_or_default();
        assert!(
            at.len() == "2025-01-01T00:00:00.000Z".len() && at.ends_with('Z'),
            "{at}"
        );
        assert_eq!(json["notices"], json!([]));
    })
    .await
}

#[tokio::test]
async fn a_modern_server_acknowledges_the_listen_stream_the_audit_opens_and_closes() {
    within(LIMIT, async {
        let (session, report, wire) = audit_of(&fixture("modern")).await;
        session.close().await;

        assert_eq!(report.era, Era::Modern);
        assert!(report.is_clean(), "{:#?}", report.findings);
        let listen = check(
            &report,
            "resources.subscribe",
            "open and close a listen stream",
        );
        assert_eq!(listen.outcome, Outcome::Ok, "{listen:?}");
        assert_eq!(listen.method.as_deref(), Some("subscriptions/listen"));
        assert_eq!(
            listen.detail,
            format!("acknowledged resourceSubscriptions [{MANUAL}], then closed")
        );
        let listens = wire.sent_requests("subscriptions/listen");
        assert_eq!(listens.len(), 1, "{}", common::show(&listens));
        assert_eq!(
            listens[0]["params"]["notifications"],
            json!({"resourceSubscriptions": [MANUAL]})
        );
        // Closed: the stream's request was cancelled (the session is closed, so
        // everything queued was written).
        assert!(
            wire.cancellations()
                .iter()
                .any(|c| c["params"]["requestId"] == listens[0]["id"]),
            "{}",
            common::show(&wire.sent())
        );
        // Tools are listed and their schemas checked, never called.
        assert_eq!(
            check(
                &report,
                "tools",
                "each tool's input schema is a valid JSON Schema"
            )
            .outcome,
            Outcome::Ok
        );
        assert!(wire.sent_requests("tools/call").is_empty());
        // `listChanged` is declared, and nothing changed.
        assert_eq!(
            check(&report, "resources.listChanged", "list change notification").outcome,
            Outcome::Unverifiable
        );
    })
    .await
}

/// A modern server that declares `resources.subscribe` and never acknowledges a
/// listen stream (every result valid under 2026-07-28).
fn never_acknowledges() -> Scripted {
    let cacheable = |mut result: Value| {
        result["resultType"] = json!("complete");
        result["ttlMs"] = json!(0);
        result["cacheScope"] = json!("private");
        result
    };
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        let result = match msg["method"].as_str() {
            Some("server/discover") => {
                return vec![capable_test_support::discover_result(
                    &id,
                    json!({"resources": {"subscribe": true}}),
                )]
            }
            Some("resources/list") => {
                cacheable(json!({"resources": [{"uri": MANUAL, "name": "manual"}]}))
            }
            Some("resources/templates/list") => cacheable(json!({"resourceTemplates": []})),
            Some("resources/read") => {
                cacheable(json!({"contents": [{"uri": MANUAL, "text": "scripted"}]}))
            }
            _ => return Vec::new(),
        };
        vec![json!({"jsonrpc": "2.0", "id": id, "result": result})]
    }))
}

#[tokio::test]
async fn a_listen_stream_not_acknowledged_within_ack_wait_is_a_violation() {
    within(LIMIT, async {
        let wire = Wire::default();
        let (options, recorder) = recorded(&wire);
        let session = connect(never_acknowledges(), options)
            .await
            .expect("connect");
        let mut audit_options = AuditOptions::default();
        audit_options.ack_wait = Duration::from_millis(200);
        let report = audit::run(&session, &recorder, &audit_options).await;
        session.close().await;

        assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
        let finding = &report.findings[0];
        assert_eq!(finding.kind, FindingKind::NoAcknowledgement);
        assert_eq!(finding.method, "subscriptions/listen");
        assert_eq!(
            finding.detail,
            "no notifications/subscriptions/acknowledged within 200ms"
        );
        assert_eq!(
            finding.request,
            wire.sent_requests("subscriptions/listen")[0]
        );
        assert_eq!(finding.response, Value::Null);
        assert_eq!(
            check(
                &report,
                "resources.subscribe",
                "open and close a listen stream"
            )
            .outcome,
            Outcome::Violation
        );
    })
    .await
}

#[tokio::test]
async fn without_its_recorder_on_the_wire_the_audit_blames_nobody_and_probes_nothing() {
    within(LIMIT, async {
        let wire = Wire::default();
        let session = connect_stdio(&fixture("read-only"), wire.options())
            .await
            .expect("connect");
        let before = wire.sent().len();
        let report = audit::run(&session, &Recorder::new(), &AuditOptions::default()).await;
        let after = wire.sent().len();
        session.close().await;

        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        assert_eq!(
            outcomes(&report),
            [("(lifecycle)", "handshake", Outcome::Unverifiable)]
        );
        assert!(
            check(&report, "(lifecycle)", "handshake")
                .detail
                .contains("Recorder::tap"),
            "{:?}",
            report.checks
        );
        assert_eq!(before, after, "{}", common::show(&wire.sent()));
    })
    .await
}
