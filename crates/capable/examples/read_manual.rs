//! Connect to a stdio MCP server, show what it declares, and read one resource only if
//! the server declared resources.
//!
//! ```text
//! cargo run -p capable --example read_manual -- docs://manual/current -- capable fixture --profile read-only
//! ```

use capable::{connect_stdio, ClientOptions, Error, Method, ServerCommand};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let uri = args
        .next()
        .unwrap_or_else(|| "docs://manual/current".into());
    let rest: Vec<String> = args.skip_while(|a| a == "--").collect();
    let (program, server_args) = match rest.split_first() {
        Some((p, a)) => (p.clone(), a.to_vec()),
        None => {
            // Default: the built-in fixture of the capable binary next to this example.
            let exe = std::env::current_exe()?;
            let capable = exe
                .parent()
                .and_then(|examples| examples.parent())
                .map(|dir| dir.join("capable"))
                .ok_or("cannot locate the capable binary")?;
            let args = vec!["fixture".into(), "--profile".into(), "read-only".into()];
            (capable.display().to_string(), args)
        }
    };
    let session = connect_stdio(
        &ServerCommand::new(program, server_args),
        ClientOptions::default(),
    )
    .await?;
    println!(
        "{} speaks {} ({} era) and declares {}",
        session.server_info(),
        session.protocol_version(),
        session.era(),
        serde_json::to_string(session.capabilities())?
    );
    let actions: Vec<&str> = session.actions().iter().map(|m| m.as_str()).collect();
    println!("a host may call: {}", actions.join(", "));

    // The capability decides, never the server's name.
    match session.read_resource(&uri).await {
        Ok(read) => println!(
            "{}\nrevision {} read at {}",
            read.text(),
            read.revision(),
            read.read_at_rfc3339()
        ),
        Err(Error::Refused(refusal)) => println!("not read: {refusal}"),
        Err(e) => return Err(e.into()),
    }
    if let Err(Error::Refused(refusal)) = session.check(Method::Subscribe) {
        println!("no subscription: {refusal}");
    }
    session.close().await;
    Ok(())
}
