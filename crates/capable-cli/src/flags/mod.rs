//! Every flag and command, in one place, documented where it is defined.

use std::path::PathBuf;
use std::time::Duration;

use capable::ProtocolChoice;
use clap::{Args, Parser, Subcommand};

use crate::colour::ColorFlag;

mod bridge;
pub use bridge::BridgeArgs;

/// capable: a strict MCP client. It reads a server's capabilities exactly, calls only
/// what the server declared, and says so when a server breaks its own declaration.
#[derive(Debug, Parser)]
#[command(name = "capable", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// `capable --version`: the version and the commit it was built from (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CAPABLE_COMMIT"),
    ")"
);

/// Options every command accepts.
#[derive(Debug, Args, Clone)]
pub struct Global {
    /// Print JSON for scripts instead of text for people.
    #[arg(long, global = true)]
    pub json: bool,
    /// Default time a request may take (`2s`, `500ms`, `1m`).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub timeout: Duration,
    /// The most a request may take when the server's progress notifications keep
    /// extending its --timeout (default: ten times --timeout).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub progress_cap: Option<Duration>,
    /// Protocol: `auto` (probe 2026-07-28, fall back to the initialize handshake),
    /// `legacy`, `modern`, or one exact version such as `2025-06-18`.
    #[arg(long, global = true, value_name = "auto|legacy|modern|VERSION", default_value = "auto", value_parser = parse_protocol)]
    pub protocol: ProtocolChoice,
    /// A server by name from an MCP config file (`mcpServers` or `servers`).
    #[arg(long, global = true, value_name = "NAME")]
    pub server: Option<String>,
    /// The config file to read `--server` from, and every server of for `servers` and
    /// `tools --all` (default: ./.mcp.json, then the user's config directory).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// An HTTP server: Streamable HTTP (either era), or a 2024-11-05 HTTP+SSE endpoint
    /// such as `http://host/sse` (detected automatically).
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    /// An extra HTTP header, `'Name: value'` (repeatable; values are never printed).
    #[arg(long = "header", global = true, value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Send methods the server did not declare instead of refusing them locally.
    #[arg(long, global = true)]
    pub lenient: bool,
    /// The most pages a list collects before it stops (an endless list is an error,
    /// never a hang).
    #[arg(long, global = true, value_name = "N", default_value = "1000")]
    pub max_pages: usize,
    /// The most items a list collects before it stops.
    #[arg(long, global = true, value_name = "N", default_value = "100000")]
    pub max_items: usize,
    /// Give a stdio server capable's whole environment. By default it gets only
    /// HOME, PATH, USER, SHELL, TERM, the locale and TMPDIR (plus a config's `env`):
    /// the environment often holds credentials.
    #[arg(long, global = true)]
    pub inherit_env: bool,
    /// How to answer a server's request for input (elicitation) without asking: accept
    /// with the form's defaults, decline or cancel. On a terminal without this flag,
    /// capable asks you.
    #[arg(long, global = true, value_enum, value_name = "POLICY")]
    pub elicitation: Option<ElicitationFlag>,
    /// A directory to offer the server as a root (repeatable). Roots are declared only
    /// when at least one is given.
    #[arg(long = "root", global = true, value_name = "PATH", value_parser = parse_root)]
    pub roots: Vec<PathBuf>,
    /// Print every message sent (`>`) and received (`<`) to stderr.
    #[arg(long, global = true)]
    pub trace: bool,
    /// Do not use the cache of what earlier commands learnt of this server (its tool
    /// list), and keep nothing.
    #[arg(long, global = true, conflicts_with = "refresh")]
    pub no_cache: bool,
    /// Ask the server again instead of using the cache, and keep the new answer.
    #[arg(long, global = true)]
    pub refresh: bool,
    /// The largest message accepted from a server (`64MiB`, `512KiB`, bytes); a
    /// larger one ends the session with a clear error instead of exhausting memory.
    #[arg(long, global = true, value_name = "SIZE", value_parser = capable::internal::text::parse_size, default_value = "64MiB")]
    pub max_message: usize,
    /// When to colour help, errors and log lines: `auto` (on a terminal, unless
    /// NO_COLOR is set), `always`, `never`.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: ColorFlag,
    #[command(flatten)]
    pub auth: AuthFlags,
}

/// OAuth settings for HTTP servers (a config entry's `oauth` gives the same).
#[derive(Debug, Args, Clone, Default)]
pub struct AuthFlags {
    /// How to log in when a server asks for authorization: `auto` (the browser on a
    /// terminal; over SSH with no display or `$BROWSER`, the device grant, else the
    /// paste login; without a terminal, fail with "authorization required"), `browser`, `paste` (print
    /// the URL, paste where the browser lands), `headless` (follow the authorization
    /// redirects without a browser), `device` (enter a code on any device: no browser
    /// or loopback needed here, as over SSH), `never`.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "MODE",
        default_value = "auto"
    )]
    pub login: LoginFlag,
    /// Where tokens are kept (default: credentials.json in the user's capable config
    /// directory, mode 0600).
    #[arg(long, global = true, value_name = "FILE")]
    pub token_store: Option<PathBuf>,
    /// A pre-registered OAuth client id.
    #[arg(long, global = true, value_name = "ID")]
    pub client_id: Option<String>,
    /// Its secret (prefer a config entry with `${VAR}`: flags show in `ps`).
    #[arg(long, global = true, value_name = "SECRET")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint: `client_secret_basic`
    /// (`basic`), `client_secret_post` (`post`), `none`, `private_key_jwt` (a
    /// pre-registered client's method, forced, or the one a dynamic registration asks
    /// for; default: a public client, or what the server lists).
    #[arg(long, visible_alias = "token-auth", global = true, value_name = "METHOD", value_parser = ["client_secret_basic", "basic", "client_secret_post", "post", "none", "private_key_jwt"])]
    pub token_endpoint_auth_method: Option<String>,
    /// The HTTPS URL of a client ID metadata document to identify as.
    #[arg(long, global = true, value_name = "URL")]
    pub client_metadata_url: Option<String>,
    /// An OAuth scope to ask for (repeatable; joined with what the server asks).
    #[arg(long = "scope", global = true, value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// The loopback port of the login redirect (for clients registered with one).
    #[arg(
        long,
        global = true,
        value_name = "PORT",
        conflicts_with = "redirect_uri"
    )]
    pub callback_port: Option<u16>,
    /// The whole redirect URI of a client registered with a fixed one
    /// (`http://localhost:8080/oauth/callback`: listened on at that host, port and
    /// path).
    #[arg(long, global = true, value_name = "URI")]
    pub redirect_uri: Option<String>,
}

/// `--login` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LoginFlag {
    /// The browser on a terminal (the device grant over SSH with no display), else none.
    #[default]
    Auto,
    /// A loopback listener and the system browser.
    Browser,
    /// Print the URL, read the redirect address from stdin.
    Paste,
    /// No browser: follow the authorization redirects.
    Headless,
    /// The device authorization grant: a code to enter on any device.
    Device,
    /// Never log in.
    Never,
}

/// `--elicitation` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ElicitationFlag {
    /// Accept, filling each field with its schema default.
    AcceptDefaults,
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
}

/// The server to talk to, as a stdio command after `--`.
#[derive(Debug, Args, Clone, Default)]
pub struct ServerArgs {
    /// The stdio server command and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `capable bench`: what to run against the server.
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Requests per phase.
    #[arg(short = 'n', value_name = "N", default_value = "1000")]
    pub n: usize,
    /// Requests in flight in the pipelined phase.
    #[arg(
        short = 'c',
        long = "concurrency",
        value_name = "C",
        default_value = "32"
    )]
    pub concurrency: usize,
    /// Untimed reads before the timed phases.
    #[arg(long, value_name = "W", default_value = "100")]
    pub warmup: usize,
    /// The resource to read (default: the first one the server lists).
    #[arg(long)]
    pub uri: Option<String>,
    /// Also time N sequential calls of this tool.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The tool's arguments as a JSON object, or `@FILE` to read the object from a file.
    #[arg(long, value_name = "JSON|@FILE", default_value = "{}")]
    pub args: String,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `capable ui`: where to serve the inspector.
#[derive(Debug, Args, Clone)]
pub struct UiArgs {
    /// The port on 127.0.0.1 (0: a free one, chosen by the system).
    #[arg(long, value_name = "N", default_value = "0")]
    pub port: u16,
    /// Print the URL but do not open a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Pin each tool's and prompt's definition on first sight in FILE (default, with a
    /// config: `NAME.pins.json` beside it); one that later differs is withheld and
    /// shown with the difference and an accept button.
    #[arg(long, value_name = "FILE", conflicts_with = "no_pins")]
    pub pins: Option<PathBuf>,
    /// Judge no definitions against pins.
    #[arg(long)]
    pub no_pins: bool,
    /// Do not watch the config file for changes. SIGHUP still reads it anew (servers
    /// added, removed or changed follow in the page; an invalid file changes nothing
    /// and the page says why).
    #[arg(long)]
    pub no_watch: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what a server declares: version, capabilities, and the methods a host may call.
    Inspect(ServerArgs),
    /// Load-test a server: handshake, sequential and pipelined reads, tool calls;
    /// throughput and latency percentiles per phase.
    Bench(BenchArgs),
    /// Read a resource: its text, its revision and when it was read.
    Read {
        /// The resource URI.
        uri: String,
        /// Write each `blob` of the contents to a file in DIR, as `tools call --save`.
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List resources (all pages).
    Resources {
        /// List resource templates instead.
        #[arg(long)]
        templates: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List tools (marking those that come with an MCP Apps UI), show one's arguments,
    /// or call one.
    /// `tools --all` lists every configured server's tools as SERVER/TOOL;
    /// `tools call SERVER/TOOL` calls one across the config.
    Tools {
        /// The tools of every server of the config (--config FILE, or the default
        /// search), under SERVER/TOOL.
        #[arg(long)]
        all: bool,
        #[command(subcommand)]
        action: Option<ToolsAction>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List prompts, or get one.
    Prompts {
        #[command(subcommand)]
        action: Option<PromptsAction>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// The server's tasks: list (2025-11-25), show or cancel one.
    Tasks {
        #[command(subcommand)]
        action: TasksAction,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's skills (the skills extension), or load and show one.
    Skills {
        #[command(subcommand)]
        action: Option<SkillsAction>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Check every server of the config at once (--config FILE, or the default
    /// search): one row each with its state, era, version, list sizes, handshake time
    /// and error. Exit 0 when all are healthy, else the highest exit code among the
    /// others.
    Servers,
    /// Pinned definitions of the config's servers (a lock file beside the config,
    /// `NAME.pins.json`): `show` what is pinned, `diff` what the servers list now
    /// against it (exit 6 when something changed), `accept` changes (SERVER/NAME, or
    /// SERVER for all of a server's; none: everything pending).
    Pins {
        #[command(subcommand)]
        action: Option<PinsAction>,
        /// The lock file (default: beside the config).
        #[arg(long, value_name = "FILE", global = true)]
        file: Option<std::path::PathBuf>,
    },
    /// Run the built-in stdio MCP server (the embedded default the demo runs against).
    Fixture(capable_fixture::Args),
    /// Serve a server (or every server of a config) to a host as one MCP server, on
    /// stdio or Streamable HTTP: `--url URL` (OAuth from `capable auth`), `--server
    /// NAME`, `-- CMD`, or `--config FILE [--only a,b]`. What the host sees is exactly
    /// what the server declared; every request passes the gating table; violations
    /// and notices go to stderr as JSON lines.
    Bridge(Box<BridgeArgs>),
    /// Walk the scenario "open the current acceptance instructions" through every fixture profile.
    Demo,
    /// Follow a resource: print each new revision with its read time. Uses the server's
    /// subscription when it declares `resources.subscribe` (legacy `resources/subscribe`,
    /// modern `subscriptions/listen`); otherwise re-reads only with `--poll`.
    Watch {
        /// The resource URI.
        uri: String,
        /// Re-read every DURATION when the server offers no subscription (or breaks
        /// the one it declared). On 2026-07-28 servers never sooner than a read's `ttlMs`.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        poll: Option<Duration>,
        /// Stop after N revisions beyond the first (default: until Ctrl-C).
        #[arg(long, value_name = "N")]
        updates: Option<u64>,
        /// Keep watching through crashes and broken connections: start (or connect to)
        /// the server again with doubling delays and jitter. A refused version or a
        /// contract violation is not retried.
        #[arg(long)]
        reconnect: bool,
        /// With --reconnect: the most restarts in a row before giving up.
        #[arg(long, value_name = "N", default_value_t = 5, requires = "reconnect")]
        max_restarts: u32,
        /// With --reconnect: how long the server must stay up before its restarts
        /// are counted anew.
        #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, requires = "reconnect")]
        healthy_after: Duration,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// A local web inspector: every server of the config (or the one named) in the
    /// browser — state, capability matrix, resources with read and watch, tool forms,
    /// prompts, the audit, the message log. Served on 127.0.0.1 behind a random token.
    Ui(UiArgs),
    /// OAuth for an HTTP server (`--url` or `--server`): log in, show, forget, print
    /// the token.
    Auth {
        #[command(subcommand)]
        action: AuthAction,
    },
    /// Check every declared capability with safe read-only probes and validate every
    /// result against the official schema. Exit 6 when the server breaks its contract.
    Audit {
        /// Also write a Markdown report a server author can act on.
        #[arg(long, value_name = "FILE.md")]
        report: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Print the completion script for a shell (`capable completions bash`), made
    /// from these very flags.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages into DIR: capable.1 and one per subcommand
    /// (capable-tools-call.1, …), made from these very flags.
    Man {
        /// Where to write them (created if missing), e.g. ~/.local/share/man/man1.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum PinsAction {
    /// What is pinned (the default).
    Show,
    /// Starts every server and shows each definition that differs from its pin (or
    /// is held), field by field; nothing is written. Exit 6 when any differs.
    Diff,
    /// Starts every server and pins what differs (or is held) as it is now.
    Accept {
        /// SERVER/NAME, or SERVER for all of its pending definitions; none: all.
        names: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsAction {
    /// Call a tool. Should the server run it as a task, capable polls it to the end
    /// (Ctrl-C cancels it with `tasks/cancel`).
    Call {
        /// The tool's name; without a server (no `--`, --url or --server), SERVER/TOOL
        /// names a server of the config and its tool.
        name: String,
        /// Its arguments as a JSON object, or `@FILE` to read the object from a file.
        #[arg(long, value_name = "JSON|@FILE", default_value = "{}")]
        args: String,
        /// Ask for a task (2025-11-25 servers that allow it for the tool; 2026-07-28
        /// servers decide by themselves): its status is shown as it changes.
        #[arg(long)]
        task: bool,
        /// Cancel the task (`tasks/cancel`) when it has not finished this long after
        /// it started.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        task_timeout: Option<Duration>,
        /// Write each image, audio or blob of the result to a file in DIR (created if
        /// missing), named after its kind and place (`image-2.png`), never overwriting.
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Show one tool's arguments: name, type, required, description, choices and
    /// default, nested objects indented (`$ref`s within the schema followed); with
    /// --json the tool as the server listed it.
    Show {
        /// The tool's name; without a server (no `--`, --url or --server), SERVER/TOOL
        /// names a server of the config and its tool.
        name: String,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum TasksAction {
    /// List the server's tasks (`tasks/list`, 2025-11-25 servers that declare it).
    List,
    /// Show one task (`tasks/get`).
    Get {
        /// The task's id.
        id: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Cancel one task (`tasks/cancel`).
    Cancel {
        /// The task's id.
        id: String,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// Load a skill (by name or `SKILL.md` URI): its files verified against the
    /// entry (size, digest, frontmatter), then its instructions printed. A tampered
    /// skill is refused.
    Show {
        /// The skill's name, or the URI of its `SKILL.md`.
        skill: String,
        /// Print this file of the skill instead (`references/FORMS.md`), verified.
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuthAction {
    /// Authorize now (discovery, registration, the login), and store the token.
    Login,
    /// The stored tokens: issuer, scopes, expiry, where they are kept (all servers
    /// without --url or --server).
    Status,
    /// Revoke (where the server offers it) and forget every token stored for the
    /// server, and the client registration no other token uses.
    Logout,
    /// Print the access token (refreshed if it is about to expire), for scripts.
    Token,
}

#[derive(Debug, Subcommand)]
pub enum PromptsAction {
    /// Get a prompt.
    Get {
        /// The prompt's name.
        name: String,
        /// Its arguments as a JSON object of strings, or `@FILE` to read the object
        /// from a file.
        #[arg(long, value_name = "JSON|@FILE", default_value = "{}")]
        args: String,
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// A directory to offer as a root: it must exist.
fn parse_root(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if path.is_dir() {
        Ok(path)
    } else {
        Err(format!("{s:?} is not a directory"))
    }
}

/// `Name: value`. An error names the header, never its value (usually a credential).
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| "a header is written 'Name: value' (the value is not shown)".to_owned())?;
    let (name, value) = (name.trim(), value.trim());
    capable::internal::http::redact::check_header(name, value)?;
    Ok((name.to_owned(), value.to_owned()))
}

/// `2s`, `500ms`, `1m`, `1.5s`, `90` (seconds), at most a year.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    capable::internal::time::parse_duration(s)
}

fn parse_protocol(s: &str) -> Result<ProtocolChoice, String> {
    s.parse().map_err(|_| {
        format!(
            "{s:?} is not a protocol choice: use auto, legacy, modern or one of {}",
            capable::internal::version::list(&capable::ProtocolVersion::ALL)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "capable", "--json", "read", "docs://x", "--", "node", "s.js",
        ])
        .unwrap();
        match cli.command {
            Command::Read { uri, server, .. } => {
                assert_eq!(uri, "docs://x");
                assert_eq!(server.command, ["node", "s.js"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(cli.global.json);
        let cli = Cli::try_parse_from([
            "capable",
            "tools",
            "call",
            "echo",
            "--args",
            "{}",
            "--timeout",
            "2s",
            "--",
            "x",
        ])
        .unwrap();
        assert_eq!(cli.global.timeout, Duration::from_secs(2));
        // An absurd duration is a usage error, not a panic.
        let absurd = Cli::try_parse_from(["capable", "--timeout", "1e300s", "inspect", "--", "x"]);
        assert!(absurd.is_err());
    }

    #[test]
    fn a_bad_header_is_refused_without_showing_its_value() {
        assert_eq!(
            parse_header("Authorization: Bearer s3cret"),
            Ok(("Authorization".into(), "Bearer s3cret".into()))
        );
        for bad in [
            "Authorization Bearer s3cret",
            "Authorization: s3cret\r\nX: 1",
        ] {
            let why = parse_header(bad).unwrap_err();
            assert!(!why.contains("s3cret"), "{why}");
        }
    }
}
