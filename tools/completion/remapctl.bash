# SPDX-License-Identifier: GPL-2.0-only
# bash completion for remapctl(8)                          -*- shell-script -*-
#
# Commands, options and which options take a value come from remapctl's
# own --help (the "Commands:" list and each command's usage line), so the
# completion follows the tool it completes.  NAME completes to the active
# dm-remap devices (dmsetup ls --target remap) for status, grow and remove, DEV
# and FILE to file names.  Needs nothing from the bash-completion package.

# The words of COMMAND's usage, brackets dropped: "remapctl dump --json DEV"
_remapctl_usage()
{
	"$1" "$2" --help 2>/dev/null | sed -n '/^Usage:/,/^$/p' | sed 's/^Usage://; s/[][]//g'
}

_remapctl_names()
{
	dmsetup ls --target remap 2>/dev/null | awk '$1 != "No" { print $1 }'
}

_remapctl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local prog=${COMP_WORDS[0]} cmd='' i n kind
	local -a cmds words opts pos

	COMPREPLY=()
	cmds=($("$prog" --help 2>/dev/null |
		awk '/^Commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 } c && /^$/ { exit }'))
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ " ${cmds[*]} help " == *" ${COMP_WORDS[i]} "* ]]; then
			cmd=${COMP_WORDS[i]}
			break
		fi
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "${cmds[*]} help --help" -- "$cur"))
		return
	fi
	if [[ $cmd == help ]]; then
		[[ $COMP_CWORD -eq $((i + 1)) ]] &&
			COMPREPLY=($(compgen -W "${cmds[*]}" -- "$cur"))
		return
	fi

	# the usage: --options (those followed by an upper-case word take a
	# value), and the positional arguments (upper-case words after none)
	read -ra words <<<"$(_remapctl_usage "$prog" "$cmd" | tr '\n' ' ')"
	local takes=' '
	for ((n = 2; n < ${#words[@]}; n++)); do
		if [[ ${words[n]} == --* ]]; then
			opts+=("${words[n]}")
			[[ ${words[n + 1]} =~ ^[A-Z]+$ ]] && takes+="${words[n]} "
		elif [[ ${words[n]} =~ ^[A-Z]+$ && ${words[n - 1]} != --* ]]; then
			pos+=("${words[n]}")
		fi
	done

	if [[ $takes == *" $prev "* ]]; then
		[[ $prev == --remaptab || $prev == --device ]] &&
			COMPREPLY=($(compgen -f -- "$cur"))
		return		# a number, a size or a label: nothing to offer
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "${opts[*]} --help" -- "$cur"))
		return
	fi

	# which positional argument this word is: options and their values,
	# and everything after "--" being positional, do not count
	n=0
	for ((i = i + 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == --* && $takes == *" ${COMP_WORDS[i]} "* ]]; then
			((i++))
		elif [[ ${COMP_WORDS[i]} != -* ]]; then
			((n++))
		fi
	done
	kind=${pos[n]}
	case $kind in
	NAME)
		[[ $cmd == status || $cmd == remove || $cmd == grow ]] &&
			COMPREPLY=($(compgen -W "$(_remapctl_names)" -- "$cur"))
		;;
	DEV | FILE)
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}
complete -F _remapctl remapctl
