# CTest fixture: runs a Python generator (GENERATOR, a path under SRC) into OUT again when it or
# the scripts it uses (HASHED, comma-separated paths under SRC) change; WHAT names the data in
# messages. Inputs: PYTHON (Debian's /usr/bin/python3), SRC (repository root), OUT.
string(REPLACE "," ";" HASHED "${HASHED}")
set(hash "")
foreach(f ${GENERATOR} ${HASHED})
  file(SHA256 ${SRC}/${f} h)
  string(APPEND hash ${h})
endforeach()
string(SHA256 hash "${hash}")
if(EXISTS ${OUT}/.hash)
  file(READ ${OUT}/.hash old)
  if(old STREQUAL hash)
    message(STATUS "${WHAT} up to date (${OUT}, ${hash})")
    return()
  endif()
endif()
file(REMOVE_RECURSE ${OUT})
# One BLAS thread (OpenBLAS, install_deps.sh; PyTorch's own threads are the generator's to set):
# ctest runs two tests at once on two cores, and OpenBLAS's idle threads spin.
set(ENV{OPENBLAS_NUM_THREADS} 1)
execute_process(COMMAND ${PYTHON} ${SRC}/${GENERATOR} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${WHAT}: ${GENERATOR} failed (${rc}); are python3-torch and python3-torchvision installed for ${PYTHON}?")
endif()
file(WRITE ${OUT}/.hash "${hash}")
