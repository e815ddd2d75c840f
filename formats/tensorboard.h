/* shardvit formats: TensorBoard event files (scalars only), written and read without protobuf or
 * TensorFlow libraries.
 *
 * File: DIR/events.out.tfevents.<unix seconds>.<hostname>, a sequence of TFRecords:
 *   u64 LE length | u32 LE masked crc32c(length bytes) | data | u32 LE masked crc32c(data)
 * Each record's data is a serialized tensorflow.Event (field numbers in docs/formats.md):
 *   first record: Event{wall_time=1 (double), file_version=3 (string "brain.Event:2")}
 *   each scalar:  Event{wall_time=1, step=2 (int64 varint),
 *                       summary=5 {value=1 {tag=1 (string), simple_value=2 (float)}}}
 * Every record is handed to the kernel with write(2) as it is logged (no user-space buffer), so
 * a crashed run keeps everything logged before the crash. Writers never allocate. */
#ifndef SV_FORMATS_TENSORBOARD_H
#define SV_FORMATS_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "core/fileio.h"
#include "core/status.h"

#define SV_TB_MAX_TAG 512
#define SV_TB_FILE_VERSION "brain.Event:2"

typedef struct sv_tb_writer {
    sv_fileio_out out;
    uint8_t rec[SV_TB_MAX_TAG + 96]; /* one encoded record */
} sv_tb_writer;

/* Create DIR (mkdir -p) and a new event file in it; writes the file_version event.
 * wall_time: seconds since the epoch for the file name and first event; <= 0 means now.
 * If a file of that name exists (same second, same host), ".<pid>" then ".<pid>.<k>" is
 * appended rather than overwriting it. */
sv_status sv_tb_open(sv_tb_writer *w, const char *dir, double wall_time);
/* Path of the event file (valid while open). */
const char *sv_tb_path(const sv_tb_writer *w);
/* Append one scalar. wall_time <= 0 means now. Tag: 1..SV_TB_MAX_TAG bytes. */
sv_status sv_tb_scalar(sv_tb_writer *w, const char *tag, int64_t step, float value, double wall_time);
/* Mark a restart at `step` (a resumed run's first logged step): Event{step, session_log
 * {status: START}}. TensorBoard then hides every event of this run directory with a step >= `step`
 * that was written before (the run the checkpoint outlived logged them), as PyTorch's
 * SummaryWriter(purge_step=...) does. No-op for step <= 0. */
sv_status sv_tb_restart(sv_tb_writer *w, int64_t step, double wall_time);
/* fsync (e.g. at checkpoints); not needed for crash-safety against process death. */
sv_status sv_tb_sync(sv_tb_writer *w);
sv_status sv_tb_close(sv_tb_writer *w);

/* ---- reader ---- */

typedef struct sv_tb_scalar_rec {
    char *tag; /* owned by the sv_tb_events */
    int64_t step;
    float value;
    double wall_time;
} sv_tb_scalar_rec;

typedef struct sv_tb_events {
    sv_tb_scalar_rec *items; /* scalars in file order (an event with several values gives several) */
    size_t n, cap;
    size_t n_records;      /* TFRecords read (file_version event included) */
    char file_version[64]; /* from the first event carrying one ("" if none) */
    int truncated_tail;    /* the file ended inside a record (allowed only when asked) */
} sv_tb_events;

/* Decode an event file image. Checks every record's length CRC and data CRC (mismatch =>
 * SV_ERR_CORRUPT naming the record index and byte offset) and parses the Event protobuf
 * (malformed => SV_ERR_FORMAT); unknown fields are skipped, non-scalar values ignored.
 * A file ending inside a record is SV_ERR_CORRUPT unless allow_truncated_tail (a run killed
 * mid-write), in which case the partial record is dropped and truncated_tail set.
 * `ev` is initialised here; free with sv_tb_events_free (also after failure). Any byte string
 * is safe to pass. */
sv_status sv_tb_decode(const void *buf, size_t len, const char *name, int allow_truncated_tail, sv_tb_events *ev);
/* Read and decode a file (size limit 1 GiB). */
sv_status sv_tb_read_file(const char *path, int allow_truncated_tail, sv_tb_events *ev);
void sv_tb_events_free(sv_tb_events *ev);

#endif
