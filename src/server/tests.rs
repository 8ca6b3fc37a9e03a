//! Tests of the server's start-up and router (`mod.rs`).

use super::agents::{Environment, api_key, choose_agent};
use super::cli::AgentChoice;
use super::*;

use clap::Parser;

fn args(flags: &[&str]) -> ServeArgs {
    let cli = cli::Cli::try_parse_from([&["askbridge", "serve"], flags].concat()).unwrap();
    let cli::Command::Serve(mut args) = cli.command else { panic!("serve") };
    // Whatever this machine's environment says, only the flags given count here.
    let given = |flag: &str| flags.contains(&flag);
    if !given("--api-key") {
        args.api_key = None;
    }
    if !given("--api-key-file") {
        args.api_key_file = None;
    }
    if !given("--claude-bin") {
        args.claude_bin = None;
    }
    if !given("--database-url") {
        args.database_url = None;
    }
    if !given("--database-url-file") {
        args.database_url_file = None;
    }
    args
}

fn executable(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

fn env(path: &[&Path], home: &Path, vars: &[(&str, &str)]) -> Environment {
    Environment {
        path: Some(std::env::join_paths(path).unwrap()),
        home: Some(home.to_path_buf()),
        vars: vars.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
    }
}

#[test]
fn on_loopback_any_folder_and_bypass_after_confirmation_are_allowed() {
    let policy = session_policy(&args(&[]), None).unwrap();
    assert_eq!(policy.workdir_root, None);
    assert_eq!(policy.bypass_refused, None);
    assert!(session_policy(&args(&["--no-bypass"]), None).unwrap().bypass_refused.unwrap().contains("--no-bypass"));
}

#[test]
fn on_a_network_address_bypass_needs_allow_bypass_and_folders_are_kept_to_a_root() {
    let root = tempfile::tempdir().unwrap();
    let root_flag = root.path().display().to_string();
    let network = ["--addr", "0.0.0.0:3000", "--workdir-root", root_flag.as_str()];
    let policy = session_policy(&args(&network), None).unwrap();
    assert_eq!(policy.workdir_root, Some(root.path().canonicalize().unwrap()));
    assert!(policy.bypass_refused.unwrap().contains("--allow-bypass"));
    let allowed = session_policy(&args(&[&network[..], &["--allow-bypass"]].concat()), None).unwrap();
    assert_eq!(allowed.bypass_refused, None);

    // Bypass as the server's default mode is refused there, not left to fail later.
    let default_bypass = [&network[..], &["--permission-mode", "bypassPermissions"]].concat();
    assert!(session_policy(&args(&default_bypass), None).unwrap_err().to_string().contains("--allow-bypass"));
    // The agent's own folder obeys the root too.
    let outside = tempfile::tempdir().unwrap();
    let error = session_policy(&args(&network), Some(outside.path())).unwrap_err().to_string();
    assert!(error.contains("outside") && error.contains("--workdir-root"), "{error}");
    assert!(session_policy(&args(&network), Some(root.path())).is_ok());
}

#[test]
fn on_a_network_address_the_root_defaults_to_the_home_folder() {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else { return };
    let policy = session_policy(&args(&["--addr", "0.0.0.0:3000"]), None).unwrap();
    assert_eq!(policy.workdir_root, Some(home.canonicalize().unwrap()));
}

#[test]
fn auto_on_a_fresh_machine_is_the_offline_demo() {
    let home = tempfile::tempdir().unwrap();
    let (choice, why) = choose_agent(&args(&[]), &env(&[], home.path(), &[]));
    assert_eq!(choice, AgentChoice::Scripted, "{why}");
}

#[test]
fn auto_ignores_the_claude_that_the_tests_install() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("project/node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    executable(&bin, "claude");
    let environment = env(&[&bin], home.path(), &[("ANTHROPIC_API_KEY", "sk-test")]);
    let (choice, why) = choose_agent(&args(&["--api-key", "sk-test"]), &environment);
    assert_eq!(choice, AgentChoice::Anthropic, "{why}");
}

#[test]
fn auto_picks_a_claude_on_path_that_is_logged_in() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    executable(&bin, "claude");
    let (choice, why) = choose_agent(&args(&[]), &env(&[&bin], home.path(), &[]));
    assert_eq!(choice, AgentChoice::Scripted, "not logged in, no key: {why}");
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/.credentials.json"), "{}").unwrap();
    let (choice, why) = choose_agent(&args(&[]), &env(&[&bin], home.path(), &[]));
    assert_eq!(choice, AgentChoice::Claude, "{why}");
}

#[test]
fn auto_takes_a_claude_bin_given_explicitly_even_from_node_modules() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = executable(&bin, "claude");
    let flags = ["--claude-bin", claude.to_str().unwrap(), "--api-key", "sk-test"];
    let (choice, why) = choose_agent(&args(&flags), &env(&[], home.path(), &[]));
    assert_eq!(choice, AgentChoice::Claude, "{why}");
}

#[test]
fn the_database_url_can_come_from_a_file_but_only_from_one_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("database-url");
    std::fs::write(&file, "postgres://askbridge:secret@db/askbridge\n").unwrap();
    let from_file = ["--database-url-file", file.to_str().unwrap()];
    assert_eq!(database_url(&args(&from_file)).unwrap(), "postgres://askbridge:secret@db/askbridge");
    let both = [&from_file[..], &["--database-url", "sqlite://x.db"]].concat();
    assert!(database_url(&args(&both)).unwrap_err().to_string().contains("not both"));
    std::fs::write(&file, " \n").unwrap();
    assert!(database_url(&args(&from_file)).unwrap_err().to_string().contains("is empty"));
    let default = database_url(&args(&["--data-dir", "/srv/ab"])).unwrap();
    assert_eq!(default, "sqlite:///srv/ab/askbridge.db");
}

#[test]
fn the_api_key_file_wins_and_must_not_be_empty() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, "  sk-from-file\n").unwrap();
    let flags = ["--api-key-file", file.to_str().unwrap(), "--api-key", "sk-flag"];
    assert_eq!(api_key(&args(&flags)).unwrap().as_deref(), Some("sk-from-file"));
    std::fs::write(&file, "\n").unwrap();
    assert!(api_key(&args(&flags[..2])).is_err());
}
