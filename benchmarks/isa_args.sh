# Sourced by the side-by-side scripts: reads [--isa=native|avx2] from "$@", exports
# the variables of that setting (benchmarks/isa.py) and sets ISA and SUFFIX
# ("" for native, "_avx2" otherwise) for the rows file. Run from the repo root.
ISA=native
for arg in "$@"; do
  case $arg in
    --isa=*) ISA=${arg#--isa=} ;;
    *) echo "usage: $0 [--isa=native|avx2]" >&2; exit 2 ;;
  esac
done
ISA_ENV=$(.venv/bin/python -m benchmarks.isa env --isa="$ISA")
eval "$ISA_ENV"
SUFFIX=$([ "$ISA" = native ] && echo "" || echo "_$ISA")
