trace_format_test.o: tests/unit/trace_format_test.cpp bpf/kvio_trace.h \
 common/error.h common/events_bin.h common/events_reader.h common/jsonl.h \
 common/input_file.h common/warn.h trace/event_format.h \
 common/event_names.h trace/event_writer.h common/output_file.h \
 common/zstd_stream.h trace/events_dump.h trace/trace_report.h \
 common/histogram.h
bpf/kvio_trace.h:
common/error.h:
common/events_bin.h:
common/events_reader.h:
common/jsonl.h:
common/input_file.h:
common/warn.h:
trace/event_format.h:
common/event_names.h:
trace/event_writer.h:
common/output_file.h:
common/zstd_stream.h:
trace/events_dump.h:
trace/trace_report.h:
common/histogram.h:
