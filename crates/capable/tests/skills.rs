//! The skills extension through a session, over a scripted server that records every
//! read: listing reads no file; loading reads `SKILL.md` only and refuses a tampered
//! one; a supporting file is read when asked for, verified, and an unlisted one is
//! refused before anything is read.

mod common;

use std::sync::{Arc, Mutex};

use capable::internal::skills::{digest, SkillError};
use capable::{connect, ClientOptions, Error, Method, Refusal};
use common::Scripted;
use serde_json::{json, Value};

const SKILL: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_TEXT: &str = "Supporting content.\n";

/// A server declaring the skills extension whose `SKILL.md` reads as `served`; the
/// entry always describes the faithful file. Every read is recorded.
fn server(served: &'static str, reads: Arc<Mutex<Vec<String>>>, declare: bool) -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        let ok = |result: Value| vec![json!({"jsonrpc": "2.0", "id": id, "result": result})];
        match msg["method"].as_str() {
            Some("server/discover") => {
                let mut caps = json!({"resources": {}});
                if declare {
                    caps["extensions"] = json!({"io.modelcontextprotocol/skills": {}});
                }
                vec![capable_test_support::discover_result(&id, caps)]
            }
            Some("skills/list") => ok(
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "skills": [{
                    "uri": SKILL,
                    "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
                    "resources": [
                        {"uri": SKILL, "digest": digest(MD.as_bytes()), "size": MD.len()},
                        {"uri": FORMS, "digest": digest(FORMS_TEXT.as_bytes()), "size": FORMS_TEXT.len()}
                    ]
                }]}),
            ),
            Some("resources/read") => {
                let uri = msg["params"]["uri"].as_str().unwrap_or("").to_owned();
                reads.lock().unwrap().push(uri.clone());
                let text = if uri == FORMS { FORMS_TEXT } else { served };
                ok(
                    json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}),
                )
            }
            _ => vec![],
        }
    }))
}

#[tokio::test]
async fn a_faithful_skill_loads_lazily_and_its_files_are_verified_when_read() {
    let reads = Arc::new(Mutex::new(Vec::new()));
    let session = connect(server(MD, reads.clone(), true), ClientOptions::default())
        .await
        .unwrap();
    let skills = session.list_skills().await.unwrap();
    assert_eq!(skills[0].name(), "pdf-processing");
    assert!(reads.lock().unwrap().is_empty(), "listing reads no file");
    let loaded = session.load_skill(&skills[0]).await.unwrap();
    assert_eq!(loaded.body, "\nSkill body.\n");
    assert_eq!(
        *reads.lock().unwrap(),
        [SKILL],
        "loading reads SKILL.md only"
    );
    let forms = session
        .read_skill_file(&loaded, "references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(forms, FORMS_TEXT.as_bytes());
    let err = session
        .read_skill_file(&loaded, "scripts/run.sh")
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Skill(SkillError::Unlisted { .. })),
        "{err}"
    );
    assert_eq!(
        reads.lock().unwrap().len(),
        2,
        "an unlisted file is never read"
    );
    session.close().await;
}

#[tokio::test]
async fn a_tampered_skill_is_refused_and_nothing_else_of_it_is_read() {
    const EVIL: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nEvil body!!\n";
    let reads = Arc::new(Mutex::new(Vec::new()));
    let session = connect(server(EVIL, reads.clone(), true), ClientOptions::default())
        .await
        .unwrap();
    let skills = session.list_skills().await.unwrap();
    let err = session.load_skill(&skills[0]).await.unwrap_err();
    assert!(
        matches!(err, Error::Skill(SkillError::Digest { .. })),
        "{err}"
    );
    assert_eq!(*reads.lock().unwrap(), [SKILL]);
    session.close().await;
}

#[tokio::test]
async fn skills_are_refused_locally_when_the_server_does_not_declare_the_extension() {
    let reads = Arc::new(Mutex::new(Vec::new()));
    let session = connect(server(MD, reads, false), ClientOptions::default())
        .await
        .unwrap();
    let err = session.list_skills().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Refused(Refusal::ExtensionNotDeclared {
                method: Method::ListSkills,
                ..
            })
        ),
        "{err}"
    );
    session.close().await;
}
