//! A session in a worktree of its own: a new branch from a base, checked out outside the person's
//! checkout, committed, merged into the base or discarded from the page. The server does the git
//! (`folder/worktree.rs`); these are the shapes both faces share.

use serde::{Deserialize, Serialize};

/// The new-session page's "in a new worktree".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewWorktree {
    /// The branch (or commit) the new branch starts from.
    pub base: String,
    /// The new branch's name.
    pub branch: String,
    /// A command run in the new worktree before the session begins (`npm ci`, say), by `sh -c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
}

/// A folder that is a git repository: its branches, for the base of a new worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Branches {
    /// The branch checked out there, if any.
    pub current: Option<String>,
    /// Every local branch, in git's order.
    pub all: Vec<String>,
}

/// A session's worktree as it stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    pub branch: String,
    pub base: String,
    /// The person's checkout the worktree belongs to.
    pub repository: String,
    /// Files changed and not committed, as `git status` lists them.
    pub uncommitted: Vec<String>,
    /// Commits on the branch that the base has not.
    pub ahead: u32,
    /// Commits on the base since the branch left it.
    pub behind: u32,
}

/// What Merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Merged {
    /// The base now has the branch's commits: moved forward to them, or with a merge commit.
    Merged { fast_forward: bool },
    /// The base and the branch changed the same lines: nothing was merged, the base is as it was.
    Conflicts { files: Vec<Conflict> },
}

/// A file both sides changed, with git's view of the conflict (its markers), as it was before the
/// merge was taken back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    pub path: String,
    pub diff: String,
}
