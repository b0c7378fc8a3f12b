# What the build's file embedders share (embed_sql.cmake, embed_console.cmake):
# writing a generated source only when its content changes, so nothing
# recompiles after a configure that changed no embedded file, and
# reconfiguring when an embedded file changes.
function(spool_write_generated out_file content source_dir files)
  if(EXISTS ${out_file})
    file(READ ${out_file} old)
  else()
    set(old "")
  endif()
  if(NOT old STREQUAL content)
    file(WRITE ${out_file} "${content}")
  endif()
  list(TRANSFORM files PREPEND ${source_dir}/)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${files})
endfunction()
