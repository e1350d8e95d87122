//! The sealing of task ids, each path: what a host is handed, what it sends back.

use serde_json::{json, Value};

use super::*;
use crate::seal::SealKey;

const NOW: u64 = 1_800_000_000;

fn ids(key: u8) -> TaskIds {
    TaskIds::new(
        KeyRing::new(SealKey::from_bytes(&[key; 32]), vec![]),
        "jira",
    )
}

fn caller(sub: &str) -> Caller<'static> {
    Caller {
        iss: Some("https://login.example.com".into()),
        sub: Some(Text::from(sub.to_owned())),
        client_id: Some("host".into()),
    }
}

/// Opens `sealed` for `caller`, as a `tasks/get` would.
fn get(ids: &TaskIds, sealed: &Value, caller: &Caller<'_>, now: u64) -> Result<Value, RpcError> {
    let mut params = json!({"taskId": sealed});
    ids.open_request(Method::GetTask, &mut params, caller, now)?;
    Ok(params["taskId"].clone())
}

#[test]
fn a_created_task_is_handed_out_sealed_and_opens_back_to_the_servers_id() {
    let ids = ids(1);
    let alice = caller("alice");
    let mut created = json!({"task": {"taskId": "t-786512e2", "status": "working"}});
    ids.seal_answer(Method::CallTool, &mut created, &alice, NOW, None)
        .unwrap();
    let sealed = created["task"]["taskId"].clone();
    assert!(!sealed.as_str().unwrap().contains("786512e2"), "{sealed}");
    assert_eq!(created["task"]["status"], "working");
    // Any replica with the key: the server's id again, for every task method.
    let other_replica = self::ids(1);
    assert_eq!(
        get(&other_replica, &sealed, &alice, NOW).unwrap(),
        "t-786512e2"
    );
    for method in [Method::TaskResult, Method::CancelTask, Method::UpdateTask] {
        let mut params = json!({"taskId": sealed, "inputResponses": {}});
        let presented = other_replica
            .open_request(method, &mut params, &alice, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(params["taskId"], "t-786512e2");
        assert_eq!(presented.sealed, sealed.as_str().unwrap());
    }
}

#[test]
fn a_forged_tampered_foreign_expired_or_other_callers_id_is_an_unknown_task() {
    let ids = ids(1);
    let alice = caller("alice");
    let sealed = Value::String(ids.seal("t1", &alice, NOW).unwrap());
    let tampered = Value::String(crate::seal::tampered(sealed.as_str().unwrap()));
    let another_server = TaskIds::new(KeyRing::new(SealKey::from_bytes(&[1; 32]), vec![]), "wiki");
    let refusals = [
        get(&ids, &json!("t1"), &alice, NOW),
        get(&ids, &json!(7), &alice, NOW),
        get(&ids, &tampered, &alice, NOW),
        get(&self::ids(2), &sealed, &alice, NOW),
        get(&ids, &sealed, &caller("bob"), NOW),
        get(&ids, &sealed, &Caller::default(), NOW),
        get(&another_server, &sealed, &alice, NOW),
        get(&ids, &sealed, &alice, expiry(NOW)),
    ];
    for refused in refusals {
        let error = refused.unwrap_err();
        assert_eq!(error.code, codes::INVALID_PARAMS);
        assert!(!error.message.contains("t1"));
    }
    // Without taskId: refused too.
    let mut params = json!({});
    assert!(ids
        .open_request(Method::GetTask, &mut params, &alice, NOW)
        .is_err());
    // Methods that name no task are left alone.
    let mut params = json!({"taskId": "t1"});
    assert_eq!(
        ids.open_request(Method::CallTool, &mut params, &alice, NOW),
        Ok(None)
    );
    assert_eq!(params["taskId"], "t1");
}

#[test]
fn one_task_is_one_id_all_day_on_every_replica_and_a_polled_id_is_repeated() {
    let (a, b) = (ids(1), ids(1));
    let alice = caller("alice");
    let at_a = a.seal("t1", &alice, NOW).unwrap();
    assert_eq!(b.seal("t1", &alice, NOW + 60).unwrap(), at_a);
    // It opens for at least a day after it was handed out, at most two.
    let day_start = NOW / PERIOD * PERIOD;
    assert!(get(&b, &json!(at_a), &alice, day_start + 2 * PERIOD - 1).is_ok());
    assert!(get(&b, &json!(at_a), &alice, day_start + 2 * PERIOD).is_err());
    // The next day the task seals to another id; the host polling with the first one
    // sees its own in the answer.
    let tomorrow = NOW + PERIOD;
    assert_ne!(b.seal("t1", &alice, tomorrow).unwrap(), at_a);
    let mut params = json!({"taskId": at_a});
    let presented = b
        .open_request(Method::GetTask, &mut params, &alice, tomorrow)
        .unwrap();
    let mut task = json!({"taskId": "t1", "status": "working"});
    b.seal_answer(
        Method::GetTask,
        &mut task,
        &alice,
        tomorrow,
        presented.as_ref(),
    )
    .unwrap();
    assert_eq!(task["taskId"], at_a);
}

#[test]
fn every_path_that_names_a_task_to_the_host_seals_it() {
    let ids = ids(1);
    let alice = caller("alice");
    let sealed = |id: &str| Value::String(ids.seal(id, &alice, NOW).unwrap());
    let related = |id: &str| json!({RELATED_TASK: {"taskId": id}});
    // A 2026-07-28 task result, with a round question naming a task.
    let mut modern = json!({"resultType": "task", "taskId": "t1", "status": "working",
        "inputRequests": {"q1": {"method": "elicitation/create",
            "params": {"message": "?", "_meta": related("t1")}}}});
    ids.seal_answer(Method::CallTool, &mut modern, &alice, NOW, None)
        .unwrap();
    assert_eq!(modern["taskId"], sealed("t1"));
    assert_eq!(
        modern["inputRequests"]["q1"]["params"]["_meta"][RELATED_TASK]["taskId"],
        sealed("t1")
    );
    // A plain tool result is not looked at: its content's taskId is the tool's.
    let mut plain = json!({"content": [], "structuredContent": {"taskId": "mine"}, "taskId": "x"});
    let before = plain.clone();
    ids.seal_answer(Method::CallTool, &mut plain, &alice, NOW, None)
        .unwrap();
    assert_eq!(plain, before);
    // A list, a result's related task, a cancelled task.
    let mut list = json!({"tasks": [{"taskId": "t1"}, {"taskId": "t2"}]});
    ids.seal_answer(Method::ListTasks, &mut list, &alice, NOW, None)
        .unwrap();
    assert_eq!(list["tasks"][1]["taskId"], sealed("t2"));
    let mut outcome = json!({"content": [], "_meta": related("t2")});
    ids.seal_answer(Method::TaskResult, &mut outcome, &alice, NOW, None)
        .unwrap();
    assert_eq!(outcome["_meta"][RELATED_TASK]["taskId"], sealed("t2"));
    let mut cancelled = json!({"taskId": "t2", "status": "cancelled"});
    ids.seal_answer(Method::CancelTask, &mut cancelled, &alice, NOW, None)
        .unwrap();
    assert_eq!(cancelled["taskId"], sealed("t2"));
    // Other methods' answers are not looked at.
    let mut other = json!({"taskId": "t2"});
    ids.seal_answer(Method::ListTools, &mut other, &alice, NOW, None)
        .unwrap();
    assert_eq!(other["taskId"], "t2");
    // An error's data.
    let mut error = RpcError {
        code: -32603,
        message: "failed".into(),
        data: Some(json!({"taskId": "t2"})),
    };
    ids.seal_error(&mut error, &alice, NOW, None);
    assert_eq!(error.data.unwrap()["taskId"], sealed("t2"));
    // A server's message naming the task the host asked about: named as the host knows
    // it (and only that id, where it stands alone).
    let presented = Presented {
        task_id: "task-1".into(),
        sealed: "SEALED".into(),
        own: false,
    };
    let mut refused = RpcError {
        code: -32603,
        message: "task task-1 is working: it has no result (not task-10)".into(),
        data: None,
    };
    ids.seal_error(&mut refused, &alice, NOW, Some(&presented));
    assert_eq!(
        refused.message,
        "task SEALED is working: it has no result (not task-10)"
    );
    // A status notification, a notification and a question about a task.
    let mut status = json!({"taskId": "t1", "status": "completed"});
    ids.seal_notification("notifications/tasks/status", &mut status, &alice, NOW)
        .unwrap();
    assert_eq!(status["taskId"], sealed("t1"));
    let mut progress =
        json!({"progressToken": 1, "progress": 1, "taskId": "x", "_meta": related("t1")});
    ids.seal_notification("notifications/progress", &mut progress, &alice, NOW)
        .unwrap();
    assert_eq!(progress["taskId"], "x");
    assert_eq!(progress["_meta"][RELATED_TASK]["taskId"], sealed("t1"));
    let mut question = json!({"message": "?", "_meta": related("t1")});
    ids.seal_question(&mut question, &alice, NOW);
    assert_eq!(question["_meta"][RELATED_TASK]["taskId"], sealed("t1"));
}

#[test]
fn a_hosts_answer_names_the_servers_task_or_none() {
    let ids = ids(1);
    let alice = caller("alice");
    let sealed = ids.seal("t1", &alice, NOW).unwrap();
    let mut answer = json!({"action": "accept", "_meta": {RELATED_TASK: {"taskId": sealed}}});
    ids.open_reply(&mut answer, &alice, NOW);
    assert_eq!(answer["_meta"][RELATED_TASK]["taskId"], "t1");
    // Another caller's id (or anything that does not open) is not passed on.
    let mut answer =
        json!({"action": "accept", "_meta": {RELATED_TASK: {"taskId": sealed}, "k": 1}});
    ids.open_reply(&mut answer, &caller("bob"), NOW);
    assert_eq!(answer["_meta"], json!({"k": 1}));
}

#[test]
fn a_servers_task_id_too_long_to_hand_out_is_refused_not_leaked() {
    let ids = ids(1);
    let alice = caller("alice");
    let long = "x".repeat(crate::seal::MAX_TASK_SEAL_LEN);
    let mut created = json!({"task": {"taskId": long}});
    assert!(ids
        .seal_answer(Method::CallTool, &mut created, &alice, NOW, None)
        .is_err());
    let mut error = RpcError {
        code: -32603,
        message: "failed".into(),
        data: Some(json!({"taskId": long, "k": 1})),
    };
    ids.seal_error(&mut error, &alice, NOW, None);
    assert_eq!(error.data.unwrap(), json!({"k": 1}));
    let mut question = json!({"message": "?", "_meta": {RELATED_TASK: {"taskId": long}}});
    ids.seal_question(&mut question, &alice, NOW);
    assert_eq!(question, json!({"message": "?", "_meta": {}}));
}

#[test]
fn a_task_of_the_bridges_own_is_sealed_as_such_and_opens_as_such_on_any_replica() {
    let maker = ids(1).with_own("bridge-ab12");
    let alice = caller("alice");
    let mut created = json!({"task": {"taskId": "bridge-ab12-1", "status": "completed"}});
    maker
        .seal_answer(Method::CallTool, &mut created, &alice, NOW, None)
        .unwrap();
    let sealed = created["task"]["taskId"].clone();
    // Another replica (its own prefix): the bridge's task, said so.
    let other = ids(1).with_own("bridge-cd34");
    let mut params = json!({"taskId": sealed});
    let presented = other
        .open_request(Method::TaskResult, &mut params, &alice, NOW)
        .unwrap()
        .unwrap();
    assert!(presented.own);
    assert_eq!(params["taskId"], "bridge-ab12-1");
    // A server's task is not (a server's id that looks like one is not sealed as one).
    let mut server = json!({"task": {"taskId": "bridge-ab12x-1", "status": "working"}});
    maker
        .seal_answer(Method::CallTool, &mut server, &alice, NOW, None)
        .unwrap();
    let mut params = json!({"taskId": server["task"]["taskId"]});
    let presented = other
        .open_request(Method::GetTask, &mut params, &alice, NOW)
        .unwrap()
        .unwrap();
    assert!(!presented.own);
    // Another caller's: unknown. A host's answer naming it: never opened for a server.
    let refused = get(&other, &sealed, &caller("bob"), NOW).unwrap_err();
    assert_eq!(refused.code, codes::INVALID_PARAMS);
    assert!(other.open(sealed.as_str().unwrap(), &alice, NOW).is_err());
}

#[test]
fn another_replicas_task_of_the_bridges_listed_here_is_sealed_as_the_id_the_host_was_given() {
    let maker = ids(1).with_own("bridge-ab12");
    let alice = caller("alice");
    let mut created = json!({"task": {"taskId": "bridge-ab12-1", "status": "completed"}});
    maker
        .seal_answer(Method::CallTool, &mut created, &alice, NOW, None)
        .unwrap();
    // Listed by another replica (its own prefix), told it is the bridge's: the same id.
    let lister = ids(1).with_own("bridge-cd34");
    let listed = || json!({"tasks": [{"taskId": "bridge-ab12-1"}, {"taskId": "task-7"}]});
    let mut list = listed();
    let elsewhere = |id: &str| id == "bridge-ab12-1";
    lister
        .seal_answer_owning(Method::ListTasks, &mut list, &alice, NOW, None, &elsewhere)
        .unwrap();
    assert_eq!(list["tasks"][0]["taskId"], created["task"]["taskId"]);
    let mut params = json!({"taskId": list["tasks"][1]["taskId"]});
    let server = lister
        .open_request(Method::GetTask, &mut params, &alice, NOW)
        .unwrap()
        .unwrap();
    assert!(!server.own, "the server's task stays the server's");
    // Not told so, the id is sealed as a server's: another id, which no store answers.
    let mut blind = listed();
    lister
        .seal_answer(Method::ListTasks, &mut blind, &alice, NOW, None)
        .unwrap();
    assert_ne!(blind["tasks"][0]["taskId"], created["task"]["taskId"]);
}
