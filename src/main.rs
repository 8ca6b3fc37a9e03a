//! The `askbridge` binary: parses the command line and runs the server, or one of the commands
//! that connect a terminal's Claude Code to it.

use clap::Parser;

use askbridge::server::cli::{Cli, Command};
use askbridge::terminal::connect::{self, ConnectOptions};

fn main() -> std::process::ExitCode {
    limit_malloc_arenas();
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(run()),
        Err(error) => {
            eprintln!("askbridge: could not start the async runtime: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// glibc gives each thread that contends for the heap an arena of its own, up to eight per core,
/// and memory freed in one is not reused by the others. With the async runtime's workers, the
/// database's threads and blocking tasks all allocating, 1,000 waiting sessions cost 39.1 KiB
/// each; with two arenas, 34.0 KiB (10,000: 32.0 and 26.8 KiB), with the same round trips
/// (`make bench`'s scale section, 2026-11-27; BENCHMARKS.md, "Memory per waiting session").
/// Set before any thread starts; `MALLOC_ARENA_MAX` in the environment still wins.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a tunable of the allocator; no thread but this one exists yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

async fn run() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => {
            askbridge::server::init_tracing();
            askbridge::server::serve(args).await.map_err(|error| {
                tracing::error!("{error}");
                error.to_string()
            })
        }
        Command::Connect(args) => {
            let options = ConnectOptions {
                url: args.url,
                token_file: args.token_file,
                data_dir: args.data_dir,
                no_token: args.no_token,
            };
            connect::connect(&options).await.map(say)
        }
        Command::Disconnect => connect::disconnect().map(say),
        Command::BundleSite { site } => std::env::current_exe()
            .and_then(|exe| askbridge::server::site::bundle(&exe, &site))
            .map_err(|error| format!("could not put the site into the binary: {error}")),
        Command::AcpHost { socket, idle_exit, mut command } => {
            let program = command.remove(0);
            let args = askbridge::agent::acp::host::HostArgs { socket, idle_exit, program, args: command };
            askbridge::agent::acp::host::run(args).await
        }
        // Never in the way: it says nothing, and exits 0 whatever happened (no decision).
        Command::Hook => {
            askbridge::terminal::hook::run().await;
            return std::process::ExitCode::SUCCESS;
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askbridge: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// What a command did, for the person who ran it.
fn say(lines: Vec<String>) {
    for line in lines {
        println!("{line}");
    }
}
