//! One row of the method table: what is true of a client→server method whatever the
//! session — in which era it exists and what it needs there, whether its results
//! carry caching hints, whether it may be answered with `input_required`, which
//! member of its params names its target, and what it is to tasks.
//!
//! A row is written once, in [the table](super), with the builders below: start from
//! the eras the method exists in ([`legacy`], [`modern`], [`both`], [`eras`]) and
//! add what else holds of it (`.cacheable()`, `.asks_for_input()`, `.target(..)`,
//! `.task(..)`). Everything else reads the row through [`Method::props`]: the gating
//! table ([`crate::gating::requirement`]), the cache ([`crate::cache::is_cacheable`]),
//! the caching hints a bridge adds to a legacy result
//! ([`crate::server::modern_result`]), the rounds
//! ([`crate::input_rounds::may_ask_for_input`]), modern HTTP's `Mcp-Name`
//! ([`Method::target_member`]) and the bridge's tasks
//! ([`crate::task_bridge::TaskBridge::route`]).
//!
//! [`Method::props`]: super::Method::props
//! [`Method::target_member`]: super::Method::target_member

use crate::capabilities::{Capability, Flag};
use crate::extensions::{Extension, TaskFeature};
use crate::version::Era;

/// What a method needs in one era, before the version within the era is known: the
/// gating table ([`crate::gating::requirement`]) turns it into a
/// [`crate::Requirement`] for one protocol version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Always allowed (lifecycle and utilities).
    Nothing,
    /// The capability's key must be present.
    Capability(Capability),
    /// The capability must be present with this flag set to `true`.
    Flag(Capability, Flag),
    /// `subscriptions/listen`: each filter field needs its own flag.
    ListenFilter,
    /// The server must declare this extension (and, for tasks, the client too).
    Extension(Extension),
    /// `completion/complete`: the `completions` capability where the version defines
    /// it (2025-03-26 on); before, nothing announces it.
    Completions,
    /// 2025-11-25's core tasks: the `tasks` capability or one of its members; a
    /// legacy version before 2025-11-25 has no such method.
    CoreTasks(TaskFeature),
}

// Shorthands for the needs of the table's rows.
pub(crate) const NOTHING: Need = Need::Nothing;
pub(crate) const RESOURCES: Need = Need::Capability(Capability::Resources);
pub(crate) const SUBSCRIBE: Need = Need::Flag(Capability::Resources, Flag::Subscribe);
pub(crate) const LISTEN_FILTER: Need = Need::ListenFilter;
pub(crate) const TOOLS: Need = Need::Capability(Capability::Tools);
pub(crate) const PROMPTS: Need = Need::Capability(Capability::Prompts);
pub(crate) const COMPLETIONS: Need = Need::Completions;
pub(crate) const LOGGING: Need = Need::Capability(Capability::Logging);
pub(crate) const CORE_TASKS: Need = Need::CoreTasks(TaskFeature::Any);
pub(crate) const CORE_TASKS_LIST: Need = Need::CoreTasks(TaskFeature::List);
pub(crate) const CORE_TASKS_CANCEL: Need = Need::CoreTasks(TaskFeature::Cancel);
pub(crate) const TASKS_EXTENSION: Need = Need::Extension(Extension::Tasks);
pub(crate) const SKILLS_EXTENSION: Need = Need::Extension(Extension::Skills);

/// What a method is to tasks: how a bridge between the two designs of tasks
/// (2025-11-25's core tasks, 2026-07-28's extension) treats it. The bridge's own table
/// says what it does with each role, per direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskRole {
    /// `tools/list`: says which tools may run as tasks (`execution.taskSupport`).
    ToolList,
    /// `tools/call`: may run as a task.
    Call,
    /// `tasks/get`: a task's status.
    Status,
    /// `tasks/result`: a finished task's outcome (2025-11-25 only).
    Outcome,
    /// `tasks/list` (2025-11-25 only).
    List,
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update`: answers to a task's questions (2026-07-28 only).
    Answers,
}

/// The properties of one client→server method (see the module documentation). Read
/// with [`Method::props`](super::Method::props); every field is fixed at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodProps {
    legacy: Option<Need>,
    modern: Option<Need>,
    cacheable: bool,
    asks_for_input: bool,
    target: Option<&'static str>,
    task: Option<TaskRole>,
}

/// A method of the legacy era (2024-11-05 … 2025-11-25) only.
pub(crate) const fn legacy(need: Need) -> MethodProps {
    MethodProps::new(Some(need), None)
}

/// A method of the modern era (2026-07-28) only.
pub(crate) const fn modern(need: Need) -> MethodProps {
    MethodProps::new(None, Some(need))
}

/// A method of both eras that needs the same in each.
pub(crate) const fn both(need: Need) -> MethodProps {
    MethodProps::new(Some(need), Some(need))
}

/// A method of both eras that needs `legacy` in one and `modern` in the other.
pub(crate) const fn eras(legacy: Need, modern: Need) -> MethodProps {
    MethodProps::new(Some(legacy), Some(modern))
}

impl MethodProps {
    /// A method with what it needs in each era (`None`: not in that era), and
    /// nothing else.
    const fn new(legacy: Option<Need>, modern: Option<Need>) -> MethodProps {
        MethodProps {
            legacy,
            modern,
            cacheable: false,
            asks_for_input: false,
            target: None,
            task: None,
        }
    }

    /// Its results carry caching hints (`ttlMs`, `cacheScope`) in 2026-07-28.
    pub(crate) const fn cacheable(self) -> MethodProps {
        MethodProps {
            cacheable: true,
            ..self
        }
    }

    /// It may be answered with `input_required` in 2026-07-28.
    pub(crate) const fn asks_for_input(self) -> MethodProps {
        MethodProps {
            asks_for_input: true,
            ..self
        }
    }

    /// `member` of its params names what it targets.
    pub(crate) const fn target(self, member: &'static str) -> MethodProps {
        MethodProps {
            target: Some(member),
            ..self
        }
    }

    /// What it is to tasks.
    pub(crate) const fn task(self, role: TaskRole) -> MethodProps {
        MethodProps {
            task: Some(role),
            ..self
        }
    }

    /// What it needs in `era`; `None` when it does not exist there.
    pub(crate) const fn need(&self, era: Era) -> Option<Need> {
        match era {
            Era::Legacy => self.legacy,
            Era::Modern => self.modern,
        }
    }

    /// Whether the method exists in `era` (in at least one of its versions: see
    /// [`crate::gating::requirement`] for one version).
    pub const fn exists_in(&self, era: Era) -> bool {
        self.need(era).is_some()
    }

    /// Whether its results carry caching hints, `ttlMs` and `cacheScope`, in
    /// 2026-07-28 (the schema's `CacheableResult`, and the skills extension's).
    pub const fn is_cacheable(&self) -> bool {
        self.cacheable
    }

    /// Whether a request of it may be answered with `input_required` (2026-07-28).
    pub const fn may_ask_for_input(&self) -> bool {
        self.asks_for_input
    }

    /// The member of its params that names what a request targets (what modern HTTP's
    /// `Mcp-Name` carries); `None` when nothing does.
    pub const fn target_member(&self) -> Option<&'static str> {
        self.target
    }

    /// What it is to tasks; `None`: nothing.
    pub const fn task_role(&self) -> Option<TaskRole> {
        self.task
    }
}
