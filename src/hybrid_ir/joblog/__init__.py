"""What a job's log holds besides the step's own lines: a header, timestamps, progress bars as
lines, a compiled library's output, and the job's process title."""
