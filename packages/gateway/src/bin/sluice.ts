#!/usr/bin/env node
import { main } from '../cli/main.js';
import { exitWith } from './exit-with.js';

exitWith(main(process.argv.slice(2)));
