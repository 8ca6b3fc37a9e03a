//! A private Postgres for the browser tests of a team server (`end2end/tests/team.spec.ts`): the
//! same one the Rust tests start (`askbridge::testing::postgres`), as a program.
//!
//! ```sh
//! test_postgres
//! ```
//!
//! It starts Postgres in a temporary folder on a free loopback port (as the `postgres` user when
//! run as root), makes an empty database, prints one line, `postgres://…`, and runs until its
//! standard input closes (the test ends, or dies): then Postgres stops and its folder is deleted.

use std::io::{Read, Write};

use askbridge::testing::postgres::TestPostgres;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let postgres = TestPostgres::start();
    let url = postgres.database().await;
    println!("{url}");
    std::io::stdout().flush().expect("stdout");
    // Until the test lets go of us: end of input, or an error reading it.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(postgres);
}
