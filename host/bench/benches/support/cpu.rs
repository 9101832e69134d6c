//! CPU ticks from `/proc`: a process's and the whole machine's, for the
//! benches that report where CPU time went.

/// `USER_HZ`, the unit of `/proc/stat` and `/proc/*/stat`: 100 on every
/// Linux architecture we run on.
pub const TICKS_PER_S: f64 = 100.0;

/// utime + stime of `/proc/<pid>/stat` (`pid` may be `self`); with
/// `children`, also cutime + cstime: the children it waited for.
pub fn process_ticks(pid: &str, children: bool) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name: state is field 3; utime, stime, cutime, cstime are 14-17.
    stat.rsplit_once(") ")
        .map(|(_, rest)| {
            rest.split(' ')
                .skip(11)
                .take(if children { 4 } else { 2 })
                .filter_map(|f| f.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// The machine's busy ticks: all but idle and iowait, from `/proc/stat`.
pub fn machine_busy_ticks() -> u64 {
    let machine = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<u64> = machine
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    cpu.iter().sum::<u64>() - cpu.get(3).unwrap_or(&0) - cpu.get(4).unwrap_or(&0)
}
