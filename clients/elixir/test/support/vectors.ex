defmodule EchoMQ.Test.Vectors do
  @moduledoc """
  Replays one golden vector (protocol/vectors/README.md is the format)
  through a connector: the keyspace before loaded into an empty database,
  the call sent with `via.eval/4`, then the reply and the whole keyspace
  after compared with the file's (times within the call's skew; the Lua
  executor's records without the native stamps; `<q>counts` by its
  totals).
  """

  alias EchoMQ.Redis

  @stamps ["enqueued_at", "updated_at"]

  @dump """
  local out = {}
  for _, key in ipairs(redis.call('KEYS', '*')) do
    local kind = redis.call('TYPE', key)['ok']
    local body = {}
    if kind == 'hash' then body = redis.call('HGETALL', key)
    elseif kind == 'zset' then body = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    elseif kind == 'string' then body = {redis.call('GET', key)}
    elseif kind == 'list' then body = redis.call('LRANGE', key, 0, -1)
    elseif kind == 'set' then
      body = redis.call('SMEMBERS', key)
      table.sort(body)
    elseif kind == 'stream' then
      for _, entry in ipairs(redis.call('XRANGE', key, '-', '+')) do
        body[#body + 1] = entry[1]
        body[#body + 1] = entry[2]
      end
    end
    out[#out + 1] = {key, kind, body}
  end
  return out
  """

  @doc "The folder of the vector files, in the repository this package compiled in."
  def folder, do: Path.join(EchoMQ.Protocol.repository(), "protocol/vectors")

  @doc "Every case: `{file name, index, transition, case name}`."
  def cases do
    for path <- Path.wildcard(Path.join(folder(), "*.json")) |> Enum.sort(),
        file = decode(path),
        {vector, index} <- Enum.with_index(file["cases"]) do
      {Path.basename(path), index, file["transition"], vector["name"]}
    end
  end

  defp decode(path), do: :jiffy.decode(File.read!(path), [:return_maps])

  defp file(name) do
    key = {__MODULE__, name}

    case :persistent_term.get(key, nil) do
      nil ->
        found = decode(Path.join(folder(), name))
        :persistent_term.put(key, found)
        found

      found ->
        found
    end
  end

  @doc "Replay case `index` of `name` on `conn` through `via`: a list of what differs (empty when it holds)."
  def replay(conn, via, kind, name, index) do
    file = file(name)
    vector = Enum.at(file["cases"], index)
    transition = String.to_atom(file["transition"])
    {:ok, "OK"} = Redis.query(conn, ["FLUSHDB"])
    now = server_ms(conn)
    load(conn, vector["before"], now)
    keys = Enum.map(vector["call"]["keys"], &bytes(&1, now))
    args = Enum.map(vector["call"]["args"], &bytes(&1, now))
    got = via.eval(conn, transition, keys, args)
    clock = {now, server_ms(conn) - now + 1}

    wrong =
      case {vector["reply"], got} do
        {%{"value" => value}, {:ok, reply}} ->
          {value, reply} = if transition == :counts, do: slots_counted(value, reply), else: {value, reply}

          if same_reply?(value, reply, clock, transition == :inspect),
            do: [],
            else: ["reply: want #{inspect(value)}, got #{inspect(reply)}"]

        {%{"error" => error}, {:error, {:server, text}}} ->
          if text == error_text(error), do: [], else: ["refusal: want #{inspect(error)}, got #{inspect(text)}"]

        {want, got} ->
          ["reply: want #{inspect(want)}, got #{inspect(got)}"]
      end

    wrong ++ Enum.map(compare(vector["after"], conn, clock, kind == :lua), &("after: " <> &1))
  end

  defp error_text(%{"code" => code, "text" => ""}), do: code
  defp error_text(%{"code" => code, "text" => text}), do: code <> " " <> text

  defp server_ms(conn) do
    {:ok, [seconds, micros]} = Redis.query(conn, ["TIME"])
    String.to_integer(seconds) * 1000 + div(String.to_integer(micros), 1000)
  end

  defp bytes(value, _now) when is_binary(value), do: value
  defp bytes(%{"now" => d}, now), do: Integer.to_string(now + d)
  defp bytes(%{"hex" => hex}, _now), do: Base.decode16!(hex, case: :mixed)
  defp bytes(%{"repeat" => one, "count" => n}, now), do: String.duplicate(bytes(one, now), n)

  defp number(%{"now" => d}, now), do: now + d
  defp number(n, _now) when is_number(n), do: n

  defp load(conn, before, now) do
    commands =
      Enum.flat_map(before, fn {key, %{"type" => type, "value" => content}} ->
        case type do
          "hash" -> [["HSET", key | Enum.flat_map(content, fn {f, v} -> [f, bytes(v, now)] end)]]
          "zset" -> for [m, s] <- content, do: ["ZADD", key, score(number(s, now)), bytes(m, now)]
          "stream" -> Enum.map(content, &xadd(key, &1, now))
          "string" -> [["SET", key, bytes(content, now)]]
          "list" -> [["RPUSH", key | Enum.map(content, &bytes(&1, now))]]
          "set" -> [["SADD", key | Enum.map(content, &bytes(&1, now))]]
        end
      end)

    for answer <- Redis.pipeline(conn, commands), do: {:ok, _} = answer
    :ok
  end

  defp score(n) when is_integer(n), do: Integer.to_string(n)
  defp score(n), do: :erlang.float_to_binary(n, [:short])

  defp xadd(key, %{"id" => %{"ms" => ms, "seq" => seq}, "fields" => fields}, now) do
    ["XADD", key, "#{number(ms, now)}-#{seq}" | Enum.flat_map(fields, fn [f, v] -> [bytes(f, now), bytes(v, now)] end)]
  end

  defp same_number?(%{"now" => _} = want, got, {now, skew}), do: abs(number(want, now) - got) <= skew
  defp same_number?(%{"left" => n}, got, {_, skew}), do: n - skew <= got and got <= n
  defp same_number?(want, got, _clock), do: want == got

  defp same_bytes?(%{"now" => _} = want, got, clock) do
    case Float.parse(got) do
      {n, ""} -> same_number?(want, n, clock)
      _ -> false
    end
  end

  defp same_bytes?(want, got, {now, _}), do: bytes(want, now) == got

  defp same_reply?(:null, got, _, _), do: got == nil
  defp same_reply?(%{"int" => n}, got, clock, _), do: is_integer(got) and same_number?(n, got, clock)
  defp same_reply?(%{"bulk" => b}, got, clock, _), do: is_binary(got) and same_bytes?(b, got, clock)
  defp same_reply?(%{"error" => e}, got, _, _), do: got == {:error, {:server, error_text(e)}}

  defp same_reply?([fields | rest], [values | more], clock, true) when is_list(fields) and is_list(values) do
    wanted = Enum.chunk_every(fields, 2)
    found = Enum.chunk_every(values, 2)

    length(fields) == length(values) and length(rest) == length(more) and
      Enum.all?(wanted, fn [f, v] ->
        Enum.any?(found, fn [g, h] -> same_reply?(f, g, clock, false) and same_reply?(v, h, clock, false) end)
      end) and
      Enum.all?(Enum.zip(rest, more), fn {w, g} -> same_reply?(w, g, clock, false) end)
  end

  defp same_reply?(want, got, clock, _) when is_list(want) do
    is_list(got) and length(want) == length(got) and
      Enum.all?(Enum.zip(want, got), fn {w, g} -> same_reply?(w, g, clock, false) end)
  end

  defp same_reply?(_, _, _, _), do: false

  # COUNTS' reply on a clock that is not the file's: its slots by their number only.
  defp slots_counted([at, totals, slots], [now, got_totals, got_slots]) when is_list(slots) and is_list(got_slots),
    do: {[at, totals, %{"int" => length(slots)}], [now, got_totals, length(got_slots)]}

  defp slots_counted(want, got), do: {want, got}

  defp compare(want, conn, {now, _} = clock, lua?) do
    {:ok, dumped} = Redis.query(conn, ["EVAL", @dump, "0"])
    found = Map.new(dumped, fn [key, kind, body] -> {key, {kind, body}} end)

    if Enum.sort(Map.keys(want)) != Enum.sort(Map.keys(found)) do
      ["keys #{inspect(Enum.sort(Map.keys(want)))}, found #{inspect(Enum.sort(Map.keys(found)))}"]
    else
      for {key, %{"type" => type, "value" => content} = entry} <- want,
          {kind, body} = found[key],
          not (type == kind and same_content?(kind, key, content, body, clock, lua?)) do
        _ = now
        "#{key}: want #{inspect(entry)}, found #{kind} #{inspect(body)}"
      end
    end
  end

  defp same_content?("hash", key, content, body, clock, lua?) do
    skip? = fn field ->
      (lua? and String.contains?(key, ":job:") and field in @stamps) or
        (String.ends_with?(key, ":counts") and (field in ["minute", "hour"] or String.contains?(field, ":")))
    end

    wanted = for {f, v} <- content, not skip?.(f), into: %{}, do: {f, v}
    got = for [f, v] <- Enum.chunk_every(body, 2), not skip?.(f), into: %{}, do: {f, v}

    Enum.sort(Map.keys(wanted)) == Enum.sort(Map.keys(got)) and
      Enum.all?(wanted, fn {f, v} -> same_bytes?(v, got[f], clock) end)
  end

  defp same_content?("zset", _key, content, body, {now, _} = clock, _) do
    got = for [m, s] <- Enum.chunk_every(body, 2), into: %{}, do: {m, elem(Float.parse(s), 0)}

    length(content) == map_size(got) and
      Enum.all?(content, fn [m, s] ->
        member = bytes(m, now)
        Map.has_key?(got, member) and same_number?(s, got[member], clock)
      end)
  end

  defp same_content?("stream", _key, content, body, {now, _} = clock, _) do
    entries = Enum.chunk_every(body, 2)

    length(entries) == length(content) and
      Enum.all?(Enum.zip(content, entries), fn {item, [id, fields]} ->
        [ms | _] = String.split(id, "-")

        same_number?(item["id"]["ms"], String.to_integer(ms), clock) and
          Enum.flat_map(item["fields"], fn pair -> Enum.map(pair, &bytes(&1, now)) end) == fields
      end)
  end

  defp same_content?("string", _key, content, body, clock, _), do: body == [] or same_bytes?(content, hd(body), clock)

  defp same_content?(kind, _key, content, body, clock, _) when kind in ["list", "set"] do
    length(content) == length(body) and Enum.all?(Enum.zip(content, body), fn {w, g} -> same_bytes?(w, g, clock) end)
  end
end
