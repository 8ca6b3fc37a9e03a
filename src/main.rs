//! The `askbridge` binary: parses the command line and runs the server.

use clap::Parser;

use askbridge::server::cli::{Cli, Command};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    askbridge::server::init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => askbridge::server::serve(args).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error}");
            eprintln!("askbridge: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
