//! The `askbridge` binary: parses the command line and runs the server, or one of the commands
//! that connect a terminal's Claude Code to it.

use clap::Parser;

use askbridge::server::cli::{Cli, Command};
use askbridge::terminal::connect::{self, ConnectOptions};

#[tokio::main]
async fn main() -> std::process::ExitCode {
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
        Command::BundleSite { site, hash_file } => std::env::current_exe()
            .and_then(|exe| askbridge::server::site::bundle(&exe, &site, hash_file.as_deref()))
            .map_err(|error| format!("could not put the site into the binary: {error}")),
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
