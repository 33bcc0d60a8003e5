defmodule EchoMQ.Protocol.Source do
  @moduledoc """
  Reads the protocol from the repository at compile time: PROTOCOL.md's
  tables (§7's transitions, §11.1's limits, §12's version) and the Lua
  scripts under `crates/echomq/lua/`, expanded byte for byte as §11.1 says
  (`--@include` lines, then the limits a script names). `EchoMQ.Protocol`
  calls these functions while it compiles, so the package keeps no copy of
  a script: the SHA1s it sends are the ones `emq scripts` writes, which
  the tests check.
  """

  @mark "--@limits\n"

  @doc "The repository root above `start`: the folder with PROTOCOL.md and the Lua sources."
  @spec repository(Path.t()) :: Path.t()
  def repository(start) do
    start
    |> Path.expand()
    |> Stream.iterate(&Path.dirname/1)
    |> Stream.take(12)
    |> Enum.find(fn dir ->
      File.regular?(Path.join(dir, "PROTOCOL.md")) and File.dir?(Path.join(dir, "crates/echomq/lua"))
    end) ||
      raise "EchoMQ for Elixir builds inside the EchoMQ repository (PROTOCOL.md and crates/echomq/lua/)"
  end

  @doc "§11.1 step 1: lines split at LF, a final LF ending the last line, a CR before an LF dropped."
  @spec lines(binary) :: [binary]
  def lines(text) do
    parts = :binary.split(text, "\n", [:global])
    parts = if List.last(parts) == "", do: Enum.drop(parts, -1), else: parts

    Enum.map(parts, fn line ->
      if String.ends_with?(line, "\r"), do: binary_part(line, 0, byte_size(line) - 1), else: line
    end)
  end

  @doc "A script as the server loads it (§11.1), from its source and the limits' table."
  @spec expand(binary, Path.t(), [{binary, integer, integer | nil}]) :: binary
  def expand(source, lua_dir, limits) do
    {out, _included} = expand_into(source, lua_dir, {[], []})
    text = out |> Enum.reverse() |> IO.iodata_to_binary()

    case :binary.split(text, @mark) do
      [^text] ->
        text

      [head, tail] ->
        rest = head <> tail

        locals =
          for {name, low, high} <- limits, named?(rest, name) do
            if high == nil,
              do: "local #{name} = #{low}\n",
              else: "local #{name}_MIN, #{name}_MAX = #{low}, #{high}\n"
          end

        head <> Enum.join(locals) <> tail
    end
  end

  defp expand_into(source, lua_dir, acc) do
    Enum.reduce(lines(source), acc, fn line, {out, included} ->
      case line do
        "--@include " <> wanted ->
          wanted = String.trim(wanted)

          cond do
            wanted in included ->
              {out, included}

            wanted == "limits" ->
              {[@mark | out], [wanted | included]}

            true ->
              include = File.read!(Path.join([lua_dir, "includes", wanted <> ".lua"]))
              expand_into(include, lua_dir, {out, [wanted | included]})
          end

        _ ->
          {["\n", line | out], included}
      end
    end)
  end

  # §11.1 step 2: whether the script names a limit, as a word, or with _MIN
  # or _MAX right after it.
  defp named?(rest, name) do
    Enum.any?(:binary.matches(rest, name), fn {at, len} ->
      before = if at > 0, do: :binary.at(rest, at - 1), else: nil
      after_name = binary_part(rest, at + len, byte_size(rest) - at - len)

      after_name =
        case after_name do
          "_MIN" <> more -> more
          "_MAX" <> more -> more
          more -> more
        end

      not word?(before) and not word?(first_byte(after_name))
    end)
  end

  defp first_byte(<<byte, _::binary>>), do: byte
  defp first_byte(<<>>), do: nil

  defp word?(nil), do: false
  defp word?(byte), do: byte in ?a..?z or byte in ?A..?Z or byte in ?0..?9 or byte == ?_

  @doc "§11.1's table of limits, in order: `{name, value or low, high or nil}`."
  @spec limits(binary) :: [{binary, integer, integer | nil}]
  def limits(protocol) do
    [_, after_start] = :binary.split(protocol, "The table, in order:")
    [paragraph | _] = :binary.split(after_start, "\n\n")

    found =
      for [_, name, low | high] <-
            Regex.scan(~r/`([A-Z][A-Z_]*)`\s+(-?\d+)(?:\.\.=(-?\d+))?/, paragraph) do
        high = if high in [[], [""]], do: nil, else: String.to_integer(hd(high))
        {name, String.to_integer(low), high}
      end

    if length(found) < 40, do: raise("PROTOCOL.md §11.1's table of limits reads as #{length(found)}")
    found
  end

  @doc "§12's `This is **protocol M.N**`, as `{major, minor}`."
  @spec version(binary) :: {non_neg_integer, non_neg_integer}
  def version(protocol) do
    case Regex.run(~r/This is \*\*protocol (\d+)\.(\d+)\*\*/, protocol) do
      [_, major, minor] -> {String.to_integer(major), String.to_integer(minor)}
      nil -> raise "PROTOCOL.md §12 does not say which protocol it is"
    end
  end

  @doc """
  §7's table of transitions: for each, its `name` (an atom, `:claim`), its
  script `file`, native `command`, `keys` (the roles in order, after
  `emq:{q}:`), `key_counts` and `effect`.
  """
  @spec transitions(binary) :: [map]
  def transitions(protocol) do
    [_, table] = :binary.split(protocol, "<!-- The table of transitions")
    [table | _] = :binary.split(table, "<!-- End of the table of transitions")

    rows =
      for row <- String.split(table, "\n"),
          String.starts_with?(row, "| "),
          not String.starts_with?(row, "| transition") do
        [name, script, command, keys, counts | rest] = cells(row)

        %{
          name: name |> String.downcase() |> String.to_atom(),
          file: String.trim(script, "`"),
          command: String.trim(command, "`"),
          keys: for([_, role] <- Regex.scan(~r/`([^`]+)`/, keys), do: role),
          key_counts: for([n] <- Regex.scan(~r/\d+/, counts), do: String.to_integer(n)),
          effect: Enum.at(rest, 2, "")
        }
      end

    if length(rows) < 20, do: raise("PROTOCOL.md §7's table reads as #{length(rows)} rows")
    rows
  end

  defp cells(row) do
    inner = row |> String.trim() |> String.trim("|")

    ~r/(?<!\\)\|/
    |> Regex.split(inner)
    |> Enum.map(&(&1 |> String.trim() |> String.replace("\\|", "|")))
  end
end
