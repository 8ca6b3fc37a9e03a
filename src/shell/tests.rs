use std::time::Duration;

use super::*;

/// Reads the shell's output until it holds `wanted` (or fails after a generous minute).
async fn until_shown(news: &mut broadcast::Receiver<Output>, seen: &mut String, wanted: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !seen.contains(wanted) {
        match tokio::time::timeout_at(deadline, news.recv()).await {
            Ok(Ok(Output::Bytes(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Ok(Ok(Output::Ended(how))) => panic!("the shell ended ({how}) before showing {wanted:?}: {seen:?}"),
            Ok(Err(error)) => panic!("{error}"),
            Err(_) => panic!("{wanted:?} never shown: {seen:?}"),
        }
    }
}

fn shells() -> Shells {
    Shells::new(AgentEnv::default())
}

#[tokio::test]
async fn a_shell_runs_in_the_sessions_folder_and_a_second_tab_sees_the_same_screen() {
    let folder = tempfile::tempdir().unwrap();
    let shells = shells();
    let shell = shells.open("s1", folder.path(), Size::default()).unwrap();
    let (_, mut news, ended) = shell.attach();
    assert!(ended.is_none());
    shell.write(b"echo $((6*7)); pwd\n").unwrap();
    let mut seen = String::new();
    until_shown(&mut news, &mut seen, "42\r\n").await;
    let canonical = folder.path().canonicalize().unwrap();
    until_shown(&mut news, &mut seen, &format!("{}\r\n", canonical.display())).await;

    // Another tab: the same shell, and what it showed.
    let again = shells.open("s1", folder.path(), Size::default()).unwrap();
    assert!(Arc::ptr_eq(&shell, &again));
    let (screen, _, _) = again.attach();
    let screen = String::from_utf8_lossy(&screen);
    assert!(screen.contains("42\r\n"), "{screen:?}");
}

#[tokio::test]
async fn a_shell_gets_none_of_the_servers_own_configuration() {
    let folder = tempfile::tempdir().unwrap();
    // SAFETY: no other thread of this test binary reads this variable.
    unsafe { std::env::set_var("ASKBRIDGE_SHELL_TEST_SECRET", "s3cret") };
    let shells = shells();
    let shell = shells.open("s1", folder.path(), Size::default()).unwrap();
    let (_, mut news, _) = shell.attach();
    shell.write(b"echo \"[${ASKBRIDGE_SHELL_TEST_SECRET:-unset}] $TERM\"\n").unwrap();
    let mut seen = String::new();
    until_shown(&mut news, &mut seen, "[unset] xterm-256color").await;
    assert!(!seen.contains("[s3cret]"));
}

#[tokio::test]
async fn a_shell_that_exits_says_so_and_the_next_open_starts_another() {
    let folder = tempfile::tempdir().unwrap();
    let shells = shells();
    let shell = shells.open("s1", folder.path(), Size::default()).unwrap();
    let (_, mut news, _) = shell.attach();
    shell.write(b"exit 3\n").unwrap();
    let how = loop {
        match tokio::time::timeout(Duration::from_secs(60), news.recv()).await.unwrap().unwrap() {
            Output::Ended(how) => break how,
            Output::Bytes(_) => {}
        }
    };
    assert_eq!(how, "the shell exited with status 3");
    assert!(matches!(shell.write(b"echo\n"), Err(ShellError::Ended)));
    let next = shells.open("s1", folder.path(), Size::default()).unwrap();
    assert!(!Arc::ptr_eq(&shell, &next));
    assert!(!next.has_ended());
}

#[tokio::test]
async fn ending_a_sessions_shell_ends_what_it_runs() {
    // bash passes its hang-up on to its jobs; dash (Debian's /bin/sh) does not.
    for program in ["/bin/sh", "/bin/bash"].into_iter().filter(|p| Path::new(p).exists()) {
        let folder = tempfile::tempdir().unwrap();
        let mut shells = shells();
        shells.program = program.into();
        let shell = shells.open("s1", folder.path(), Size::default()).unwrap();
        let (_, mut news, _) = shell.attach();
        // Quoted apart, so that the line as typed (the terminal shows it) is not the answer.
        shell.write(b"sleep 600 & echo \"chi\"\"ld=$!\"\n").unwrap();
        let pid = shown_pid(&mut news, "child=").await;
        // The shell names the job as soon as it forked it; until the job runs `sleep`, it is a copy
        // of the shell that may still have the shell's own hang-up handler, which takes the
        // signal and then runs `sleep` all the same (seen once in `make test`).
        let sleeping = move || async move {
            let command = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            command.starts_with(b"sleep\0").then_some(())
        };
        crate::testing::wait_until("the job running sleep", Duration::from_secs(60), sleeping).await;
        shells.end("s1");
        assert!(shell.has_ended());
        // Gone, or a zombie its new parent has not reaped yet.
        let ended = move || async move {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            state
                .is_none_or(|stat| stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
                .then_some(())
        };
        let what = format!("{program}'s background job ending with it");
        crate::testing::wait_until(&what, Duration::from_secs(60), ended).await;
    }
}

#[tokio::test]
async fn a_job_left_by_a_shell_that_exited_by_itself_is_not_signalled_later() {
    // Once the shell is reaped (the terminal closed: nothing holds it any more), its pid may name
    // another session: ending it must not signal by it. A job that still writes to the terminal
    // keeps the shell unreaped, and is hung up with it (the test above).
    for program in ["/bin/sh", "/bin/bash"].into_iter().filter(|p| Path::new(p).exists()) {
        let folder = tempfile::tempdir().unwrap();
        let heard = folder.path().join("heard");
        let mut shells = shells();
        shells.program = program.into();
        let shell = shells.open("s1", folder.path(), Size::default()).unwrap();
        let (_, mut news, _) = shell.attach();
        // A job away from the terminal that notes each signal it hears, and ends at USR1.
        let job = format!(
            "sh -c 'trap \"echo hup >> {f}\" HUP; trap \"echo usr1 >> {f}; exit\" USR1; \
             echo ready >> {f}; while :; do sleep 1 & wait $!; done' </dev/null >/dev/null 2>&1 & echo \"chi\"\"ld=$!\"; exit\n",
            f = heard.display()
        );
        shell.write(job.as_bytes()).unwrap();
        let pid = shown_pid(&mut news, "child=").await;
        let read = || std::fs::read_to_string(&heard).unwrap_or_default();
        crate::testing::wait_until("the job's traps", Duration::from_secs(60), || {
            let ready = read().contains("ready");
            async move { ready.then_some(()) }
        })
        .await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !shell.has_ended() {
            match tokio::time::timeout_at(deadline, news.recv()).await {
                Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
                other => panic!("{program}: the shell did not end: {other:?}"),
            }
        }
        shells.end("s1");
        // A hang-up sent by `end` would be pending before this USR1, and heard first.
        // SAFETY: kill only sends a signal; the job is this test's own.
        unsafe { libc::kill(pid, libc::SIGUSR1) };
        let said = crate::testing::wait_until("the job to hear USR1", Duration::from_secs(60), || {
            let heard = read();
            async move { heard.contains("usr1").then_some(heard) }
        })
        .await;
        assert_eq!(
            said, "ready\nusr1\n",
            "{program}: the job the person left running was signalled after the shell had gone"
        );
    }
}

/// The number on the line the shell shows after `label`.
async fn shown_pid(news: &mut broadcast::Receiver<Output>, label: &str) -> i32 {
    let mut seen = String::new();
    until_shown(news, &mut seen, label).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let after = seen.rsplit(label).next().unwrap();
        if let Some((digits, _)) = after.split_once("\r\n") {
            return digits.trim().parse().unwrap();
        }
        match tokio::time::timeout_at(deadline, news.recv()).await.unwrap().unwrap() {
            Output::Bytes(bytes) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Output::Ended(how) => panic!("{how}"),
        }
    }
}

#[test]
fn the_scrollback_keeps_the_last_lines_whole() {
    let mut kept = Vec::new();
    keep(&mut kept, b"one\ntwo\nthree\n", 10);
    assert_eq!(kept, b"three\n");
    keep(&mut kept, b"abcdefghijklmn", 10);
    assert_eq!(kept, b"efghijklmn", "no line's end to cut at: the last bytes");
}

#[test]
fn a_size_stays_within_what_a_screen_can_show() {
    assert_eq!(Size::bounded(0, 0), Size { cols: 2, rows: 1 });
    assert_eq!(Size::bounded(u16::MAX, u16::MAX), Size { cols: 1000, rows: 500 });
}
