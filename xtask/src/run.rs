//! Running commands, with the command line echoed and failures named.

use std::process::Command;

use crate::Result;

/// Runs `command`, failing with its command line when it fails.
pub fn run(command: &mut Command) -> Result {
    eprintln!("    $ {}", describe(command));
    let status = command
        .status()
        .map_err(|e| format!("could not start `{}`: {e}", describe(command)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(command)))
    }
}

/// A command started in the background by [`spawn`]: [`Background::wait`] fails like [`run`].
pub struct Background {
    child: std::process::Child,
    described: String,
}

/// Starts `command` (its output goes where ours does) and returns at once: the slow steps of a
/// first run (compiling the module, installing the wasm-bindgen CLI, building the bridge) wait on
/// one core each at their serial ends (LTO, linking), so running them side by side saves minutes.
pub fn spawn(command: &mut Command) -> Result<Background> {
    let described = describe(command);
    eprintln!("    $ {described} &");
    let child = command
        .spawn()
        .map_err(|e| format!("could not start `{described}`: {e}"))?;
    Ok(Background { child, described })
}

impl Background {
    /// Waits for the command to finish.
    pub fn wait(mut self) -> Result {
        let status = self
            .child
            .wait()
            .map_err(|e| format!("`{}` did not finish: {e}", self.described))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{}` failed ({status})", self.described))
        }
    }
}

/// Runs `command` like [`run`], also keeping what it printed on stdout: `Err` carries it too.
pub fn run_keeping_stdout(command: &mut Command) -> std::result::Result<String, (String, String)> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    eprintln!("    $ {}", describe(command));
    let failed = |why: String| (why, String::new());
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("could not start `{}`: {e}", describe(command))))?;
    let mut kept = String::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            println!("{line}");
            let _ = std::io::stdout().flush();
            kept.push_str(&line);
            kept.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| failed(format!("`{}` did not finish: {e}", describe(command))))?;
    if status.success() {
        Ok(kept)
    } else {
        Err((format!("`{}` failed ({status})", describe(command)), kept))
    }
}

/// Runs `command` quietly and returns its stdout, or `None` when it cannot run or fails.
pub fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn describe(command: &Command) -> String {
    let mut text = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}
