"""The safety framework every writing command goes through (rebuild-index, compact, truncate-to-epoch, recover,
salvage), split by concern. The commands do not drive it by hand: ``ops/repair_plan.drive`` takes the locks,
recovers interrupted work, and hands a plan's steps to ``repair_plan.execute_steps``, the one caller of
``Transaction``.

* ``lock.py``: kafkalog's flock on the partition directory and the broker's ``.lock`` (``locked_log_dir``), held for
  the whole ``--execute``; the probe ``ensure_unlocked``; the "not a Kafka log directory" note.
* ``journal.py``: the journal and its pointer (found whatever ``$KAFKALOG_BACKUP_DIR`` says), the backup directory
  (never inside the log dir) and the backups, the writer's pid and start time.
* ``transaction.py``: ``Transaction``, the ordered file-changing steps of a commit (stage ``.cleaned``/``.tmp``,
  back up, ``.cleaned -> .swap``, deletes, ``.swap -> final``, or the directory exchange of a truncation); its
  docstring has the commit order and why each state is one the broker's loader resolves.
* ``recovery.py``: ``recover_interrupted``, which finishes or undoes what a killed transaction left.
* ``files.py``: the primitives all of them share: staging names, fsync, atomic JSON, ``safe_child`` (never write
  through a symlink out of the partition directory) and ``count_step()``, the hook after every file-changing step that the
  crash tests drive.

The names below are the framework's interface; the modules' other names are theirs.
"""

from kafkalog_cli.ops.safety.files import (
    BUILD_SUFFIX,
    CHECKPOINT_NAMES,
    KILL_ENV,
    PLAIN_SUFFIX,
    SLOW_ENV,
    STEP_LOG_ENV,
    offset_named,
    safe_child,
    staging_name,
)
from kafkalog_cli.ops.safety.journal import (
    BACKUP_ENV,
    JOURNAL_NAME,
    JOURNAL_VERSION,
    backup_root,
    backup_subdir,
    check_backup_dir,
    default_backup_dir,
)
from kafkalog_cli.ops.safety.lock import ensure_unlocked, locked_log_dir, log_dir_warnings
from kafkalog_cli.ops.safety.recovery import recover_interrupted
from kafkalog_cli.ops.safety.transaction import DELETE_DIR_SUFFIX, NO_EXCHANGE_ENV, Transaction

__all__ = [
    "BACKUP_ENV", "BUILD_SUFFIX", "CHECKPOINT_NAMES", "DELETE_DIR_SUFFIX", "JOURNAL_NAME", "JOURNAL_VERSION",
    "KILL_ENV", "NO_EXCHANGE_ENV", "PLAIN_SUFFIX", "SLOW_ENV", "STEP_LOG_ENV", "Transaction", "backup_root",
    "backup_subdir", "check_backup_dir", "default_backup_dir", "ensure_unlocked", "locked_log_dir",
    "log_dir_warnings", "offset_named", "recover_interrupted", "safe_child", "staging_name",
]
