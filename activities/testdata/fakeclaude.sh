#!/bin/sh
# A stand-in for `claude -p --output-format json`: reads the prompt from stdin and acts on its
# first word. Used by the headless-run tests.
prompt=$(cat)
case "$prompt" in
  ok*)      printf 'some progress output\n{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"num_turns":3,"result":"done: %s","session_id":"sess-42","total_cost_usd":0.0123,"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":5,"cache_creation_input_tokens":7}}\n' "$prompt" ;;
  sleep*)   sleep 30 ;;
  crash*)   kill -9 $$ ;;
  nojson*)  echo "panic: something" >&2; exit 1 ;;
  network*) echo "Error: connect ECONNRESET 1.2.3.4:443" >&2; exit 1 ;;
  deny*)    echo '{"type":"result","is_error":false,"result":"could not","session_id":"s","permission_denials":[{"tool_name":"Write","tool_use_id":"t1","tool_input":{}}]}' ;;
  invalid*) echo '{"type":"result","is_error":true,"result":"Invalid tool: Frobnicate","session_id":"s"}' ;;
  conc*)    echo "start $(date +%s%N) $prompt $PPID" >> "$FAKE_LOG"; sleep 0.2
            echo "end $(date +%s%N) $prompt $PPID" >> "$FAKE_LOG"
            printf '{"type":"result","is_error":false,"result":"%s","session_id":"s","total_cost_usd":0.001}\n' "$prompt" ;;
  args*)    printf '{"type":"result","is_error":false,"result":"%s","session_id":"s"}\n' "$*" ;;
  pwd*)     printf '{"type":"result","is_error":false,"result":"%s","session_id":"s"}\n' "$(pwd -P)" ;;
  env*)     printf '{"type":"result","is_error":false,"result":"%s","session_id":"s"}\n' "$(env | cut -d= -f1 | sort | tr '\n' ' ')" ;;
  flood*)   yes 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 3000000; echo '{"type":"result","result":"late"}' ;;
  *)        echo '{"type":"result","is_error":true,"result":"unknown prompt"}' ;;
esac
